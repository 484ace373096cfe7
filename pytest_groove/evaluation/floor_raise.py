"""``groove floors --raise``: ratchet the floors in groove.toml up to what was reached.

Each floor of ``[eval] fail_under`` (a table, an inline table or the option's string
form) is raised to the latest recorded run's value of its metric, rounded *down* to a
step (0.01 by default), when that is higher.  A floor is never lowered.  The file is
edited in place with tomlkit, which keeps every comment, blank line, key order and
quoting: only the changed numbers differ.  The latest run is the newest stored run
that can be trusted (:mod:`.history_trust`: not edited, not dated in the future),
measured the golden file the configuration names as it is now, and was measured with
the settings the configuration names now (:func:`_settings_differ`: the model, the
reranker, the k list, the optional metrics, the search pipeline, the vector index and
the metric and chunker versions): a one-off run of another golden file (``groove eval
--golden smoke.yml``) or of another model (``--model e5-small`` beside a main line of
``hash``) is not the main line the floors guard, and is skipped and counted.  When
neither groove.toml nor ``--model`` names the model and the runs left were measured
with more than one, which of them is the main line is not guessed: the command asks.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import String

from pytest_groove.embed.names import model_slug
from pytest_groove.errors import GrooveError, UsageError, clip, clip_path
from pytest_groove.evaluation.golden.file import golden_hash, resolve_golden_path
from pytest_groove.evaluation.history.file import history_path, load_history
from pytest_groove.evaluation.runs.record import Fingerprint, RunRecord, format_timestamp
from pytest_groove.evaluation.runs.trust import trusted_runs
from pytest_groove.files.atomic import write_atomic
from pytest_groove.files.guarded_io import GOLDEN_CAP, read_guarded
from pytest_groove.scoring.floors import (
    FLOORS_EXAMPLE,
    FloorError,
    Floors,
    floor_metric,
    parse_floors,
    read_floors_setting,
)
from pytest_groove.scoring.metric_table import unasked_optional
from pytest_groove.settings.config import config_text, read_config_bytes, settings_from
from pytest_groove.settings.records import Settings

#: floors are raised to a multiple of this, rounded down
DEFAULT_STEP = 0.01
#: UTF-8's byte-order mark, which Windows editors put before a config's text
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class FloorChange:
    """One floor and what the latest run measured."""

    key: str
    label: str
    floor: float
    measured: float
    #: the raised floor (None: stays, the run is not higher by a whole step)
    raised: float | None


@dataclass(frozen=True)
class FloorReport:
    config: Path
    run: RunRecord
    floors: tuple[FloorChange, ...]
    #: why each newer trusted run was passed over ("another golden file", "another
    #: model (e5-small)", ...), newest first
    passed_over: tuple[str, ...] = ()

    @property
    def changed(self) -> tuple[FloorChange, ...]:
        return tuple(f for f in self.floors if f.raised is not None)

    @property
    def skipped(self) -> int:
        """How many newer trusted runs were passed over."""
        return len(self.passed_over)

    @property
    def measured_with(self) -> str:
        """``model hash``, or ``retriever <name>`` for a run of a retriever of your own."""
        return measured_with(self.run.fingerprint)

    def passed_over_phrase(self) -> str | None:
        """``1 newer run(s) of another golden file and 2 of another model (e5-small)
        passed over`` (None: none was)."""
        if not self.passed_over:
            return None
        counts: dict[str, int] = {}
        for why in self.passed_over:
            counts[why] = counts.get(why, 0) + 1
        parts = [f"{n} of {why}" for why, n in counts.items()]
        return (
            f"{parts[0].replace(' of ', ' newer run(s) of ', 1)}"
            + "".join(f" and {part}" for part in parts[1:])
            + " passed over"
        )


def measured_with(fingerprint: Fingerprint) -> str:
    """What answered a run, for people: ``model hash`` or ``retriever <name>``."""
    if fingerprint.retriever is not None:
        return f"retriever {clip(fingerprint.retriever)}"
    return f"model {clip(fingerprint.model)}"


#: the fingerprint keys groove.toml decides for a run of the built-in engine (the
#: model is compared only when named: see :func:`_settings_differ`); not the limit (a
#: flag), the golden file (compared first), the index's context mode or a retriever
_ENGINE_KEYS = (
    "reranker",
    "k_values",
    "metric_version",
    "fts_query_version",
    "chunker_version",
    "mmr",
    "parent_retriever",
    "fusion",
    "vector_centring",
    "fts_script_gate",
    "vector_index",
    "document_first",
    "note_order",
    "fts_coverage_vote",
    "metrics",
)
#: those a run of a retriever of your own records (its pipeline is its own)
_RETRIEVER_KEYS = ("k_values", "metric_version", "chunker_version", "metrics")


def configured_fingerprint(settings: Settings, golden_digest: str) -> Fingerprint:
    """The fingerprint of a run of the built-in engine with these settings (the limit
    and the context mode are not decided by them and are left at a placeholder)."""
    return Fingerprint.build(
        model=settings.index.model,
        reranker_id=settings.search.reranker,
        limit=max(settings.eval.k_values),
        k_values=settings.eval.k_values,
        golden_hash=golden_digest,
        search=settings.search,
        context_mode=None,
        vector_index=settings.index.vector_index,
        metrics=settings.eval.metrics,
    )


def _same_model(stored: str, named: str) -> bool:
    """Two spellings of one model (an HTTP endpoint written two ways shares its index)."""
    if stored == named:
        return True
    try:
        return model_slug(stored) == model_slug(named)
    except UsageError:  # an empty name: no model
        return False


def _settings_differ(wanted: Fingerprint, run: Fingerprint, model_named: bool) -> list[str]:
    """The keys the configuration decides in which ``run`` differs from ``wanted``
    (``model`` first, and only when a model is named)."""
    mine, theirs = wanted.to_json(), run.to_json()
    out = []
    if model_named and not _same_model(run.model, wanted.model):
        out.append("model")
    keys = _RETRIEVER_KEYS if run.retriever is not None else _ENGINE_KEYS
    out += [key for key in keys if mine.get(key) != theirs.get(key)]
    return out


def round_down(value: float, step: float) -> float:
    """``value`` down to a multiple of ``step``, written with the step's decimals."""
    places = int(max(0, -Decimal(str(step)).as_tuple().exponent))  # type: ignore[operator]
    # the tolerance keeps 0.85 / 0.01 = 84.999... at 85; the loop keeps the result
    # from ever passing the value itself, whatever the tolerance did
    steps = math.floor(value / step + 1e-9)
    floor = round(steps * step, places)
    while floor > value and steps > 0:
        steps -= 1
        floor = round(steps * step, places)
    return floor


def floor_text(value: float) -> str:
    """A floor as written to the config and shown: the shortest spelling that reads
    back as exactly that number (``0.7142857``, ``0.85``, ``1``) -- never one rounded
    to fewer digits, which could read back above the value it was rounded down to."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class _Config:
    """The config file and what ``--raise`` reads of it."""

    source: Path
    #: the parsed document (tomlkit: comments and layout kept) and its ``fail_under``
    doc: Any
    floors: Any
    #: the golden file the configuration names (``[eval].golden``, else the KB's default)
    golden: Path
    settings: Settings
    #: where the model the floors' runs were measured with is named (None: nowhere)
    model_from: str | None
    #: the file opens with a byte-order mark, which the rewrite keeps
    bom: bool = False


def _config_and_floors(kb: Path, config: Path | None, model: str | None = None) -> _Config:
    """The config file, its floors, the golden file and settings it names (``model``:
    the ``--model`` of ``groove floors``, over the file's)."""
    # one read of the file for the settings and for the rewrite
    read = read_config_bytes(kb, config)
    settings = settings_from(read, kb)
    golden = resolve_golden_path(kb, None, settings.eval.golden)
    if settings.source is None or read is None:
        raise GrooveError(
            f"no groove.toml in {clip_path(kb)}: add [eval] fail_under = {{ ... }} with the floors "
            f"to raise (for example {FLOORS_EXAMPLE})"
        )
    source = settings.source
    # the bytes read as the settings were (no link followed into the KB), and their
    # line endings kept: the rewrite changes the numbers and nothing else
    doc = tomlkit.parse(config_text(read[1]))
    section = doc.get("eval")
    floors = None if section is None else section.get("fail_under")
    if floors is None:
        raise GrooveError(
            f"{clip_path(source)} sets no floors: add fail_under under [eval] (for example "
            f"{FLOORS_EXAMPLE}) and run `groove floors --raise` again"
        )
    model_from = None
    if model is not None:
        if not model.strip():
            raise UsageError("--model needs a model name (as `groove eval --model` takes it)")
        settings = replace(settings, index=replace(settings.index, model=model.strip()))
        model_from = "--model"
    elif "model" in doc:
        model_from = f"model in {clip_path(source)}"
    return _Config(source, doc, floors, golden, settings, model_from, read[1].startswith(_BOM))


def _latest_run(kb: Path, config: _Config) -> tuple[RunRecord, tuple[str, ...]]:
    """The newest trusted run of the golden file as it is now, measured with the
    settings the configuration names, and why each newer trusted run was passed over."""
    path = history_path(kb)
    runs = trusted_runs(load_history(path, warnings=[]))
    if not runs:
        raise GrooveError(
            f"no recorded run to raise the floors to in {path}; run `groove eval` first"
        )
    golden = config.golden
    data = read_guarded(golden, "golden file", GOLDEN_CAP, within=kb)
    # without the golden file (each command line names one with --golden, not the
    # config) nothing says which golden file is the main line's: every run's counts
    digest = None if data is None else golden_hash(data)
    wanted = configured_fingerprint(config.settings, digest or "")
    named = config.model_from is not None
    why: list[str | None] = []
    for run in runs:
        if digest is not None and run.fingerprint.golden_hash != digest:
            why.append("another golden file")
            continue
        differ = _settings_differ(wanted, run.fingerprint, named)
        if differ[:1] == ["model"]:
            why.append(f"another {measured_with(run.fingerprint).replace(' ', ' (', 1)})")
        elif differ:
            why.append(f"other settings ({', '.join(differ)})")
        else:
            why.append(None)
    kept = [run for run, reason in zip(runs, why, strict=True) if reason is None]
    if not kept:
        raise GrooveError(_no_run(path, golden, runs, why, wanted, config))
    if not named:
        _refuse_several_models(path, kept, config)
    at = runs.index(kept[0])
    return kept[0], tuple(reason for reason in why[:at] if reason is not None)


def _no_run(
    path: Path,
    golden: Path,
    runs: list[RunRecord],
    why: list[str | None],
    wanted: Fingerprint,
    config: _Config,
) -> str:
    """Why no stored run can be raised to (newest run first in ``runs``)."""
    if all(reason == "another golden file" for reason in why):
        return (
            f"no recorded run in {path} measured the golden file {golden} as it is now "
            f"(the newest, {format_timestamp(runs[0].timestamp)}, measured another golden "
            "file or an earlier version of this one); run `groove eval` first"
        )
    newest = next(
        run for run, reason in zip(runs, why, strict=True) if reason != "another golden file"
    )
    differ = _settings_differ(wanted, newest.fingerprint, config.model_from is not None)
    mine, theirs = wanted.to_json(), newest.fingerprint.to_json()
    shown = "; ".join(
        f"{key}: {clip(str(theirs.get(key)))} (that run) vs {clip(str(mine.get(key)))} (now)"
        for key in differ[:4]
    )
    where = clip_path(config.source) + (" and --model" if config.model_from == "--model" else "")
    return (
        f"no recorded run in {path} of the golden file as it is now was measured with the "
        f"settings {where} names (the newest, {format_timestamp(newest.timestamp)}, "
        f"differs: {shown}); run `groove eval` with them first, or pass --model to name "
        "the model of the runs the floors guard"
    )


def _refuse_several_models(path: Path, kept: list[RunRecord], config: _Config) -> None:
    """Runs of more than one model (or retriever) and none named: which is the main
    line, and which an experiment, is not guessed (the newest could be either)."""
    newest: dict[str, RunRecord] = {}
    for run in kept:  # newest first
        newest.setdefault(measured_with(run.fingerprint), run)
    if len(newest) < 2:
        return
    listed = "; ".join(
        f"{label}, newest run {format_timestamp(run.timestamp)}" for label, run in newest.items()
    )
    raise GrooveError(
        f"the runs in {path} the floors could be raised to were measured with more than "
        f"one model ({listed}), and neither {clip_path(config.source)} nor the command "
        "line names the one the floors guard: pass --model NAME (or set model in "
        "groove.toml, or remove an experiment's runs with `groove history delete RUN`)"
    )


def plan_raise(
    kb: Path, config: Path | None, step: float = DEFAULT_STEP, model: str | None = None
) -> FloorReport:
    """What ``--raise`` would do (nothing is written); ``model``: ``--model``."""
    named = _config_and_floors(kb, config, model)
    source, floors = named.source, named.floors
    run, passed_over = _latest_run(kb, named)
    pairs = read_floors_setting(floors.unwrap() if hasattr(floors, "unwrap") else floors, "")
    # a floor on a metric the run did not measure has no measured value (not 0.000),
    # as groove eval refuses it before any search
    measured_k = run.fingerprint.k_values
    unmeasured = Floors(pairs).unknown_k(measured_k) + unasked_optional(
        (key for key, _ in pairs), run.fingerprint.metrics or ()
    )
    if unmeasured:
        raise GrooveError(
            f"invalid config {clip_path(source)}: [eval].fail_under names {', '.join(unmeasured)}, "
            f"which the latest run ({format_timestamp(run.timestamp)}) did not measure "
            f"(k values: {', '.join(str(k) for k in measured_k)}; optional metrics: "
            f"{', '.join(run.fingerprint.metrics or ()) or 'none'})"
        )
    out = []
    for key, floor in pairs:
        metric = floor_metric(key)
        measured = metric.of_aggregate(run.aggregate)
        target = round_down(measured, step) if math.isfinite(measured) else floor
        raised = target if target > floor + 1e-12 else None
        out.append(FloorChange(key, metric.label, floor, measured, raised))
    return FloorReport(source, run, tuple(out), passed_over)


def _spelled_key(floors: Any, key: str) -> str:
    """The key as the file spells it (``MRR``, ``mrr``...) for the threshold key ``key``."""
    for written in floors:
        if floor_metric(str(written)).threshold_key == key:
            return str(written)
    raise FloorError(f"{key} not found")


def respelled(spec: str, raised: Mapping[str, float]) -> str:
    """``spec`` (the option's ``metric=number,...`` form) with the number of each floor
    in ``raised`` replaced; every other character -- names, spacing, the numbers of the
    floors that stay -- as written."""
    parsed = dict(parse_floors(spec).pairs)  # checked already; the keys as stored
    parts = []
    for part in spec.split(","):
        name, sep, value = part.partition("=")
        key = floor_metric(name).threshold_key
        if key in raised and key in parsed:
            number = value.strip()
            start = value.index(number)
            value = f"{value[:start]}{floor_text(raised[key])}{value[start + len(number) :]}"
        parts.append(f"{name}{sep}{value}")
    return ",".join(parts)


def apply_raise(
    kb: Path, config: Path | None, step: float = DEFAULT_STEP, model: str | None = None
) -> FloorReport:
    """Raise the floors in place; returns what changed (the file is untouched if nothing)."""
    report = plan_raise(kb, config, step, model)
    if not report.changed:
        return report
    named = _config_and_floors(kb, config, model)
    source, doc, floors = named.source, named.doc, named.floors
    raised = {c.key: c.raised for c in report.changed if c.raised is not None}
    if isinstance(floors, String):
        # the string as the user wrote it, quotes and all, but for the raised numbers
        doc["eval"]["fail_under"] = String.from_raw(
            respelled(str(floors), raised), type_=floors.type
        )
    else:
        for key, value in raised.items():
            floors[_spelled_key(floors, key)] = value
    data = (_BOM if named.bom else b"") + tomlkit.dumps(doc).encode("utf-8")
    try:
        write_atomic(source, data)
    except OSError as exc:
        # written beside it and renamed over it: the file is as it was
        raise GrooveError(
            f"could not write {clip_path(source)}: {exc.strerror or exc}; the floors were not "
            "raised and the file is unchanged (free some space, or make it writable)"
        ) from None
    return report
