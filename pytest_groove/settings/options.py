"""The one table of options both doors share: the pytest plugin and the ``groove`` CLI.

Each option is declared once -- name, kind (which fixes how a value is checked), help
text, metavar, and which spellings exist -- and every spelling is derived from it:

- ``--groove-<name>`` on the pytest command line (``plugin/options.py``);
- ``groove_<name>`` in the pytest ini file (same module);
- ``--<name>`` on the ``groove`` subcommands that take it (``cli/args.py``).

Both doors read the given values into one :class:`RunOptions`, and the evaluation
inputs are planned from that record in one place (``evaluation/plan.py``).  Options
only one door has (``groove search --limit``, ``--format``, ``--plot``...) are
declared by that door.

Standard library only: the plugin imports this module in every pytest run of an
environment where pytest-groove is installed.  The checks that need
:mod:`pytest_groove.settings.config` (also stdlib only) import it when a value is given.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_groove.errors import clip_repr

if TYPE_CHECKING:
    from pytest_groove.settings.records import Settings

#: how a value is written and checked
Kind = Literal[
    "path",
    "text",
    "klist",
    "limit",
    "tristate",
    "unit",
    "flag",
    "threshold",
    "vindex",
    "seconds",
    "alpha",
    "floors",
    "metrics",
    "retriever",
]


@dataclass(frozen=True)
class Option:
    """One option: spelled ``--groove-<name>`` / ``groove_<name>`` / ``--<name>``."""

    name: str
    kind: Kind
    help: str
    metavar: str | None = None
    #: ``--groove-<name>`` exists
    plugin_flag: bool = True
    #: the ``groove_<name>`` ini key exists
    ini: bool = True
    #: ``--<name>`` exists on the ``groove`` subcommands that list it
    cli: bool = True

    @property
    def dest(self) -> str:
        """The Python name of the value (``mmr-lambda`` -> ``mmr_lambda``)."""
        return self.name.replace("-", "_")

    @property
    def pytest_flag(self) -> str:
        return f"--groove-{self.name}"

    @property
    def ini_key(self) -> str:
        return f"groove_{self.dest}"

    @property
    def cli_flag(self) -> str:
        return f"--{self.name}"

    def parse(self, shown_as: str, text: str) -> Any:
        """``text`` checked and converted; ``shown_as`` names the option in a ValueError."""
        return _PARSERS[self.kind](shown_as, text)


OPTIONS: tuple[Option, ...] = (
    Option(
        "kb",
        "path",
        "evaluate the Markdown knowledge base in DIR: one test per golden query "
        "(switches the plugin on; without it pytest-groove does nothing)",
        "DIR",
        cli=False,  # the CLI spells it --kb-path and requires it (cli/args.py)
    ),
    Option(
        "golden",
        "path",
        "golden file (default: [eval].golden in groove.toml, else <kb>/.groove-eval.yml)",
        "FILE",
    ),
    Option(
        "config",
        "path",
        "groove.toml to read (default: <kb>/groove.toml when it exists)",
        "FILE",
    ),
    Option(
        "k",
        "klist",
        "cut-offs for recall@k and nDCG@k, e.g. 1,5,10 (default: [eval].k_values)",
        "LIST",
    ),
    Option(
        "metrics",
        "metrics",
        "also measure these metrics, e.g. precision,map: precision (P@k), hit_rate "
        "(success@k), map (MAP at the limit), r_precision (default: [eval].metrics)",
        "LIST",
    ),
    Option(
        "limit",
        "limit",
        "hits fetched per query (default: the largest k; capped at 1000)",
        "N",
    ),
    Option(
        "model",
        "text",
        "embedding model, e.g. e5-small (default) or hash (fast, lexical, not semantic)",
        "NAME",
    ),
    Option(
        "reranker",
        "text",
        "reranker stage, e.g. a cross-encoder (default: the config's, else none)",
        "NAME",
    ),
    Option(
        "mmr",
        "tristate",
        "turn maximal marginal relevance re-ranking on or off (true/false)",
        "BOOL",
    ),
    Option(
        "mmr-lambda",
        "unit",
        "MMR relevance/diversity balance in [0, 1]",
        "X",
    ),
    Option(
        "mmr-same-doc-penalty",
        "unit",
        "extra MMR penalty for a second chunk of the same document, in [0, 1]",
        "X",
    ),
    Option(
        "parent-retriever",
        "tristate",
        "turn the parent retriever (neighbouring / whole-document context) on or off",
        "BOOL",
    ),
    Option(
        "vector-index",
        "vindex",
        "vector index searched: flat (exact, the default) or hnsw (approximate, for KBs of "
        "millions of chunks; recorded in the run's fingerprint)",
        "KIND",
    ),
    Option(
        "index-dir",
        "path",
        "keep the index in DIR instead of <kb>/.groove/<model>/ (e.g. a CI cache)",
        "DIR",
    ),
    Option(
        "no-reindex",
        "flag",
        "use the index as it is (error when there is none) instead of bringing it up to date",
    ),
    Option(
        "no-history",
        "flag",
        "neither read nor write <kb>/.groove-eval-history.json (no diff, no gate)",
    ),
    Option(
        "no-diff",
        "flag",
        "do not compare with the baseline run (the run is still recorded; the regression "
        "gate is then a no-op)",
    ),
    Option(
        "fail-on-regression",
        "flag",
        "exit with status 1 when a metric dropped by more than [eval].regression_threshold "
        "against the baseline run (under pytest each regressed query fails too)",
    ),
    Option(
        "freeze-baseline",
        "flag",
        "record this run as the frozen baseline that later runs are compared with",
        ini=False,
    ),
    Option(
        "baseline-file",
        "path",
        "the accepted baseline the gate compares with, committed with the code (default: "
        "[eval].baseline_file, else <kb>/.groove-baseline.json); written only on request",
        "FILE",
    ),
    Option(
        "accept",
        "flag",
        "write this run as the accepted baseline (the baseline file), for a pull request "
        "to accept an intended change; review the file's diff",
        ini=False,
    ),
    Option(
        "strict",
        "flag",
        "fail known misses too: queries that missed in the accepted baseline and still "
        "miss (default: [eval].strict; otherwise they are expected failures)",
    ),
    Option(
        "baseline",
        "text",
        "compare with the stored run RUN (its timestamp as `groove history` prints it, or a "
        "unique prefix) instead of the frozen or newest compatible run",
        "RUN",
    ),
    Option(
        "threshold",
        "threshold",
        "how far a metric may drop before it is a regression: one number for every metric, "
        "or metric=number pairs such as recall@5=0.02,mrr=0.05 (others keep "
        "[eval].regression_threshold)",
        "SPEC",
    ),
    Option(
        "significance",
        "alpha",
        "count a metric as regressed only when its drop exceeds its threshold AND the paired "
        "sign-flip test gives p < ALPHA, e.g. 0.05 (default: [eval].significance, else off)",
        "ALPHA",
    ),
    Option(
        "fail-under",
        "floors",
        "fail when a metric is below its floor, baseline or not, e.g. recall@5=0.9,mrr=0.8 "
        "(default: [eval].fail_under)",
        "SPEC",
    ),
    Option(
        "retriever",
        "retriever",
        "measure your own retriever instead of the built-in search: module:attr (a callable "
        "(query, limit), a LangChain or a LlamaIndex retriever) or an http:// search URL",
        "SPEC",
    ),
    Option(
        "retriever-name",
        "text",
        "name the retriever in the fingerprint and the reports (default: its groove_name, "
        "else the spec and the vector store behind it); runs of different names are never "
        "compared",
        "NAME",
    ),
    Option(
        "retriever-timeout",
        "seconds",
        "seconds an http:// retriever may take per query (default: $GROOVE_RETRIEVER_TIMEOUT, "
        "else 30)",
        "SECONDS",
    ),
    Option(
        "retriever-token-env",
        "text",
        "send the token in environment variable VAR to an http:// retriever as "
        "Authorization: Bearer (the token is never printed or recorded)",
        "VAR",
    ),
    Option(
        "retriever-path-key",
        "text",
        "metadata / payload key holding each hit's path, dotted for nested ones (e.g. "
        "metadata.source; default: source, file_path, path...)",
        "KEY",
    ),
    Option(
        "retriever-heading-key",
        "text",
        "metadata / payload key holding each hit's heading (default: heading, else the "
        "Markdown splitter's header keys)",
        "KEY",
    ),
    Option(
        "json",
        "path",
        "also write the run as JSON (the `groove eval --format json` shape) to FILE",
        "FILE",
        cli=False,  # groove eval prints the same JSON with --format json
    ),
    Option(
        "html",
        "path",
        "also write an HTML report with plots to FILE (needs pytest-groove[plots])",
        "FILE",
    ),
    Option(
        "junit-properties",
        "flag",
        "add each golden query's metrics to the JUnit XML as <properties> (off by default: "
        "they break strict JUnit schema validation)",
        plugin_flag=False,
        cli=False,
    ),
    Option(
        "trec-run",
        "path",
        "also write the run's rankings as a TREC run file (qid Q0 docid rank score tag) to "
        "FILE, for trec_eval, pytrec_eval or ranx (see docs/interop.md)",
        "FILE",
    ),
    Option(
        "trec-qrels",
        "path",
        "also write the golden set as TREC qrels (qid 0 docid grade) to FILE",
        "FILE",
    ),
    Option(
        "markdown",
        "path",
        "also write a Markdown summary to FILE: the verdict first, for $GITHUB_STEP_SUMMARY "
        "or a pull-request comment",
        "FILE",
    ),
    Option(
        "badge",
        "path",
        "also write a shields.io endpoint badge (JSON) of one metric to FILE, coloured by "
        "the gate's verdict",
        "FILE",
    ),
    Option(
        "badge-metric",
        "text",
        "the metric the badge shows (default: the first floor's metric, else recall at the "
        "largest k)",
        "METRIC",
    ),
)

OPTIONS_BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}

#: the kinds whose flag may repeat, the lists merged: ``--k 1,5 --k 10`` is ``--k 1,5,10``
#: (every other flag given twice counts once, the last, as argparse has it)
LIST_KINDS: frozenset[Kind] = frozenset({"klist", "metrics"})


@dataclass(frozen=True)
class RunOptions:
    """The values a door was given, one field per option of :data:`OPTIONS` but ``kb``.

    None means "not given": the config file or the built-in default decides.  Paths
    are as the door resolved them (the plugin makes them absolute).
    """

    golden: Path | None = None
    config: Path | None = None
    k: tuple[int, ...] | None = None
    metrics: tuple[str, ...] | None = None
    limit: int | None = None
    model: str | None = None
    reranker: str | None = None
    mmr: bool | None = None
    mmr_lambda: float | None = None
    mmr_same_doc_penalty: float | None = None
    parent_retriever: bool | None = None
    vector_index: str | None = None
    index_dir: Path | None = None
    no_reindex: bool = False
    no_history: bool = False
    no_diff: bool = False
    fail_on_regression: bool = False
    freeze_baseline: bool = False
    baseline_file: Path | None = None
    accept: bool = False
    strict: bool = False
    baseline: str | None = None
    threshold: str | None = None
    significance: float | None = None
    fail_under: str | None = None
    retriever: str | None = None
    retriever_name: str | None = None
    retriever_timeout: float | None = None
    retriever_token_env: str | None = None
    retriever_path_key: str | None = None
    retriever_heading_key: str | None = None
    json: Path | None = None
    html: Path | None = None
    junit_properties: bool = False
    trec_run: Path | None = None
    trec_qrels: Path | None = None
    markdown: Path | None = None
    badge: Path | None = None
    badge_metric: str | None = None
    #: option name -> where a door read it when not from its command line (the pytest
    #: ini file): the gate's loosening warning names it
    origins: tuple[tuple[str, str], ...] = ()


#: (option, option it cannot go with): given both, the first would be silently ignored
CONTRADICTIONS: tuple[tuple[str, str], ...] = (
    ("freeze-baseline", "no-history"),
    ("baseline", "no-history"),
    ("baseline", "no-diff"),
)


def contradiction(options: RunOptions, spell: Callable[[str], str]) -> str | None:
    """The refusal of the first pair of :data:`CONTRADICTIONS` that ``options`` gives
    both of, the options named by ``spell(name)``; None when there is none."""

    def given(name: str) -> bool:
        value = getattr(options, name.replace("-", "_"))
        return value is not None and value is not False

    for name, other in CONTRADICTIONS:
        if given(name) and given(other):
            needs = "the history" if other == "no-history" else "a comparison"
            return f"{spell(name)} needs {needs}: drop {spell(other)}"
    return None


#: the options that make the gate (their source is named when the gate is loosened)
GATE_OPTIONS = frozenset({"threshold", "fail-under", "significance"})

#: fields of :class:`RunOptions` that are no option
_NOT_OPTIONS = frozenset({"origins"})


def read_run_options(value_of: Callable[[Option], Any]) -> RunOptions:
    """A :class:`RunOptions` from ``value_of(option)`` (None = not given)."""
    values: dict[str, Any] = {}
    for field in fields(RunOptions):
        if field.name in _NOT_OPTIONS:
            continue
        option = OPTIONS_BY_NAME[field.name.replace("_", "-")]
        value = value_of(option)
        if option.kind == "flag":
            value = bool(value)
        elif option.kind == "klist" and value is not None:
            value = tuple(value) or None
        elif option.kind == "metrics" and value is not None:
            value = _merged_metrics(value)
        elif option.kind == "path" and value is not None:
            value = Path(value)
        values[field.name] = value
    return RunOptions(**values)


def _merged_metrics(names: Any) -> tuple[str, ...]:
    """The metrics of a repeated ``--metrics`` once each, in report order (``--metrics
    recall`` asks for none of the optional ones: still given, so ``[eval].metrics``
    does not apply)."""
    from pytest_groove.scoring.metric_names import OPTIONAL_METRICS

    given = set(names)
    return tuple(name for name in OPTIONAL_METRICS if name in given)


# --------------------------------------------------------------------------- checks
#
# Each check takes the option as the user spelled it and the raw text, and returns
# the value or raises ValueError with a one-line message; each door wraps that in
# the error type it needs (argparse's, pytest's usage error).


def _parse_path(name: str, text: str) -> str:
    if not text.strip():
        raise ValueError(f"{name} needs a path, got an empty value")
    return text


def _parse_text(name: str, text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError(f"{name} needs a value, got an empty one")
    return value


def _parse_klist(name: str, text: str) -> tuple[int, ...]:
    from pytest_groove.errors import GrooveError
    from pytest_groove.settings.config import parse_k_list

    try:
        return parse_k_list(name, text)
    except GrooveError as exc:
        raise ValueError(exc.message) from None


def _parse_metrics(name: str, text: str) -> tuple[str, ...]:
    from pytest_groove.scoring.metric_names import parse_metric_names
    from pytest_groove.text.list_values import split_option_list

    return parse_metric_names(split_option_list(name, text, "metrics", "precision,map"), name)


def _parse_limit(name: str, text: str) -> int:
    from pytest_groove.text.list_values import ascii_int

    try:
        value = ascii_int(text)
    except ValueError:
        raise ValueError(f"{name} takes a whole number of hits (got {clip_repr(text)})") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1 (got {value})")
    return value


def _parse_tristate(name: str, text: str) -> bool:
    from pytest_groove.errors import GrooveError
    from pytest_groove.settings.config import parse_bool_flag

    try:
        return parse_bool_flag(name, text)
    except GrooveError as exc:
        raise ValueError(exc.message) from None


def _parse_unit(name: str, text: str) -> float:
    from pytest_groove.text.list_values import ascii_float

    try:
        value = ascii_float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number in [0, 1] (got {clip_repr(text)})") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1] (got {clip_repr(text)})")
    return value


def _parse_threshold(name: str, text: str) -> str:
    from pytest_groove.scoring.thresholds import ThresholdError, parse_thresholds

    try:
        parse_thresholds(text, 0.0)  # checked now; the config's default is applied later
    except ThresholdError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return text.strip()


def _parse_alpha(name: str, text: str) -> float:
    from pytest_groove.text.list_values import ascii_float

    try:
        value = ascii_float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0.0 < value < 1.0:
        raise ValueError(
            f"{name} takes a significance level between 0 and 1, e.g. 0.05 (got {text!r})"
        )
    return value


def _parse_floors(name: str, text: str) -> str:
    from pytest_groove.scoring.floors import FloorError, parse_floors

    try:
        parse_floors(text)
    except FloorError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return text.strip()


def _parse_vindex(name: str, text: str) -> str:
    from pytest_groove.settings.config import VECTOR_INDEX_KINDS

    value = text.strip().lower()
    if value not in VECTOR_INDEX_KINDS:
        raise ValueError(
            f"{name} takes one of {', '.join(VECTOR_INDEX_KINDS)} (got {clip_repr(text)})"
        )
    return value


def _parse_seconds(name: str, text: str) -> float:
    from pytest_groove.text.list_values import ascii_float

    try:
        value = ascii_float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} takes a positive number of seconds (got {text!r})")
    return value


def _parse_retriever(name: str, text: str) -> str:
    from pytest_groove.settings.retriever_spec import spec_problem

    value = _parse_text(name, text)
    problem = spec_problem(value)
    if problem is not None:
        raise ValueError(f"{name} {clip_repr(value)}: {problem}")
    return value


def _parse_flag(name: str, text: str) -> bool:
    raise ValueError(f"{name} takes no value")  # flags are store_true; never parsed


_PARSERS: dict[Kind, Callable[[str, str], Any]] = {
    "path": _parse_path,
    "text": _parse_text,
    "klist": _parse_klist,
    "limit": _parse_limit,
    "tristate": _parse_tristate,
    "unit": _parse_unit,
    "flag": _parse_flag,
    "vindex": _parse_vindex,
    "threshold": _parse_threshold,
    "seconds": _parse_seconds,
    "alpha": _parse_alpha,
    "floors": _parse_floors,
    "metrics": _parse_metrics,
    "retriever": _parse_retriever,
}


def settings_for(kb: Path, options: RunOptions) -> Settings:
    """``groove.toml`` (or ``--config``) with the options that override it applied.

    Here, not beside the evaluation's plan that uses it: ``groove index`` reads its
    settings through it too, and imports nothing of the evaluation.
    """
    from pytest_groove.settings.config import SearchOverrides, load_settings, with_overrides

    return with_overrides(
        load_settings(kb, options.config),
        model=options.model,
        index_dir=options.index_dir,
        vector_index=options.vector_index,
        overrides=SearchOverrides(
            reranker=options.reranker,
            mmr=options.mmr,
            mmr_lambda=options.mmr_lambda,
            mmr_same_doc_penalty=options.mmr_same_doc_penalty,
            parent_retriever=options.parent_retriever,
        ),
    )
