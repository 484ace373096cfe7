"""Settings: built-in defaults < ``groove.toml`` < command line / pytest options.

Everything is validated once, here, into frozen dataclasses; the rest of the code
never re-checks a value.  A bad value raises :class:`GrooveError` naming the file,
the key and the accepted range.

``groove.toml`` is looked for at ``--config FILE`` (CLI) / ``groove_config`` (ini),
else at ``<kb>/groove.toml``.  A relative ``[eval].golden`` is resolved against the
directory of the config file that names it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from pytest_groove.errors import GrooveError, UsageError, clip, clip_path, clip_repr, flag
from pytest_groove.files.guarded_io import read_guarded
from pytest_groove.files.merge_conflicts import conflict_marker_lines, has_conflict, line_list
from pytest_groove.files.path_limits import config_path
from pytest_groove.files.paths import check_os_path
from pytest_groove.files.regular import read_regular_file
from pytest_groove.files.resource_limits import raise_if_limit
from pytest_groove.scoring.metric_names import read_metric_names
from pytest_groove.settings.records import (
    CONFIG_FILE_NAME,
    DEFAULT_EXCLUDE_DIRS,
    DEFAULT_VECTOR_INDEX,
    K_MAX,
    KNOWN_PARSERS,
    SEARCH_LIMIT_MAX,
    VECTOR_INDEX_KINDS,
    EvalSettings,
    FusionParams,
    IndexSettings,
    MmrSettings,
    ParentRetrieverSettings,
    RetrieverSettings,
    SearchSettings,
    Settings,
)
from pytest_groove.shapes import (
    Reader,
    ShapeError,
    list_of,
    read_bool,
    read_int,
    read_number,
    read_str,
)
from pytest_groove.text.echo import conversion_reason, int_text, quote_value
from pytest_groove.text.list_values import ascii_int, split_option_list

T = TypeVar("T")

#: the KB's own groove.toml may hold at most this many bytes
CONFIG_CAP = 1024 * 1024


class _Section:
    """One TOML table being consumed key by key; leftovers are unknown keys.

    Values are read by the typed readers of :mod:`pytest_groove.shapes`; a value
    that does not fit becomes one line naming the file, the key and what it must be.
    A key that is absent keeps the dataclass field's own default (read with
    :meth:`take`), so every default is stated once, on the settings dataclasses.
    """

    def __init__(self, data: dict[str, Any], where: str, source: Path) -> None:
        self._data = dict(data)
        self.where = where
        self.source = source

    def _fail(self, key: str, expected: str) -> GrooveError:
        return GrooveError(
            f"invalid config {clip_path(self.source)}: {self.where}{key} must be {expected} "
            f"(got {quote_value(self._data.get(key))})"
        )

    def pop_section(self, key: str) -> _Section | None:
        if key not in self._data:
            return None
        value = self._data.pop(key)
        if not isinstance(value, dict):
            raise GrooveError(
                f"invalid config {clip_path(self.source)}: [{self.where}{key}] must be a table"
            )
        return _Section(value, f"{self.where}{key}.", self.source)

    def pop(self, key: str, reader: Reader[T]) -> T | None:
        """The value of ``key`` read by ``reader`` (None when absent; TOML has no null)."""
        if key not in self._data:
            return None
        try:
            value = reader(self._data[key], f"{self.where}{key}")
        except ShapeError as exc:
            raise self._fail(key, exc.expected or "something else") from None
        del self._data[key]
        return value

    def take(
        self, readers: Mapping[str, Reader[Any]], names: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Settings-dataclass arguments for the keys present, read in ``readers`` order.

        ``readers`` maps field names to readers; the TOML key is the field name
        unless ``names`` says otherwise.  Absent keys are left out, so the dataclass
        supplies their defaults.
        """
        values: dict[str, Any] = {}
        for name, reader in readers.items():
            value = self.pop((names or {}).get(name, name), reader)
            if value is not None:
                values[name] = value
        return values

    def finish(self) -> None:
        if self._data:
            unknown = clip(", ".join(sorted(self._data)))
            table = self.where.rstrip(".") or "top level"
            raise GrooveError(
                f"invalid config {clip_path(self.source)}: unknown key(s) in [{table}]: {unknown} "
                "(see docs/configuration.md for the accepted keys)"
            )


def _number(lo: float, hi: float) -> Reader[float]:
    """A finite number in ``[lo, hi]``."""

    def read(value: Any, path: str) -> float:
        return read_number(value, path, lo=lo, hi=hi)

    return read


def _whole(lo: int, hi: int) -> Reader[int]:
    """A whole number in ``[lo, hi]``."""

    def read(value: Any, path: str) -> int:
        return read_int(value, path, lo=lo, hi=hi)

    return read


def _text(value: Any, path: str) -> str:
    return read_str(value, path, non_empty=True)


_STRINGS = list_of(read_str, "a list of strings")
_WHOLES = list_of(read_int, "a list of whole numbers")
_UNIT = _number(0.0, 1.0)
_WEIGHT = _number(0.0, 1e6)
#: each table's keys, in the order they are read, by field name; the ranges live
#: here, the defaults on the dataclasses
_FUSION_KEYS = {
    "rrf_k": _number(1.0, 1e6),
    "bm25_heading_weight": _WEIGHT,
    "bm25_context_weight": _WEIGHT,
    "bm25_content_weight": _WEIGHT,
}
_MMR_KEYS = {"enabled": read_bool, "lambda_": _UNIT, "same_doc_penalty": _UNIT}
_PARENT_KEYS = {
    "enabled": read_bool,
    "whole_doc_threshold_tokens": _whole(0, 8192),
    "max_expanded_tokens": _whole(1, 8192),
}
_SEARCH_SWITCHES = {
    "fts_query_version": _whole(3, 4),
    "vector_centring": read_bool,
    "fts_script_gate": read_bool,
    "fts_coverage_vote": read_bool,
    "document_first": read_bool,
    "note_order": read_bool,
}


def _record_of(
    sec: _Section | None,
    record: Callable[..., T],
    readers: Mapping[str, Reader[Any]],
    names: Mapping[str, str] | None = None,
) -> T:
    """The record a table is read into: its defaults when the table is absent, else
    each key read (:meth:`_Section.take`) and any other key refused."""
    if sec is None:
        return record()
    value = record(**sec.take(readers, names))
    sec.finish()
    return value


def _parse_fusion(sec: _Section | None) -> FusionParams:
    fusion = _record_of(sec, FusionParams, _FUSION_KEYS)
    if sec is not None and fusion.weights == (0.0, 0.0, 0.0):
        raise GrooveError(
            f"invalid config {clip_path(sec.source)}: the three bm25 weights in [search.fusion] "
            "cannot all be 0"
        )
    return fusion


def _parse_mmr(sec: _Section | None) -> MmrSettings:
    return _record_of(sec, MmrSettings, _MMR_KEYS, names={"lambda_": "lambda"})


def _parse_parent(sec: _Section | None) -> ParentRetrieverSettings:
    parent = _record_of(sec, ParentRetrieverSettings, _PARENT_KEYS)
    if sec is not None:
        check_parent_retriever(parent, clip_path(sec.source))
    return parent


def check_parent_retriever(parent: ParentRetrieverSettings, where: str) -> None:
    if parent.max_expanded_tokens <= parent.whole_doc_threshold_tokens:
        raise GrooveError(
            f"invalid config {where}: [search.parent_retriever] max_expanded_tokens "
            f"({parent.max_expanded_tokens}) must be greater than whole_doc_threshold_tokens "
            f"({parent.whole_doc_threshold_tokens})"
        )


def check_k_values(k_values: tuple[int, ...], where: str) -> None:
    if not k_values:
        raise GrooveError(f"invalid {where}: k_values must hold at least one k (e.g. [1, 5, 10])")
    bad = [k for k in k_values if k < 1]
    if bad:
        raise GrooveError(f"invalid {where}: every k must be at least 1 (got {int_text(bad[0])})")
    if max(k_values) > K_MAX:  # results are capped anyway; a longer k cannot be printed
        raise GrooveError(
            f"invalid {where}: every k must be at most {K_MAX:,} (got {int_text(max(k_values))})"
        )


def parse_settings(data: dict[str, Any], source: Path) -> Settings:
    """Validate a parsed ``groove.toml`` document into :class:`Settings`."""
    top = _Section(data, "", source)
    reranker = top.take({"reranker": _text})
    index = _parse_index(top)
    search = _parse_search(top.pop_section("search"), reranker)
    ev = _parse_eval(top.pop_section("eval"))
    retriever = _parse_retriever(top.pop_section("retriever"))
    top.finish()
    return Settings(index=index, search=search, eval=ev, retriever=retriever, source=source)


_RETRIEVER_KEYS = {
    "name": _text,
    "timeout": _number(0.001, 86_400.0),
    "token_env": _text,
    "path_key": _text,
    "heading_key": _text,
}


def _parse_retriever(sec: _Section | None) -> RetrieverSettings:
    return _record_of(sec, RetrieverSettings, _RETRIEVER_KEYS)


def _parse_index(top: _Section) -> IndexSettings:
    """The top-level keys and tables that shape the index: model, exclusions, parsers."""
    source = top.source
    values = top.take({"model": _text, "exclude_dirs": _STRINGS, "exclude_headings": _STRINGS})
    if any(not h.strip() for h in values.get("exclude_headings", ())):
        # an empty entry is a substring of every heading: it would drop every section
        raise GrooveError(
            f"invalid config {clip_path(source)}: exclude_headings cannot hold an empty string"
        )
    values["index_dir"] = _parse_index_dir(top)
    values.update(top.take({"vector_index": _text}))
    vector_index = values.get("vector_index", DEFAULT_VECTOR_INDEX)
    if vector_index not in VECTOR_INDEX_KINDS:
        raise GrooveError(
            f"invalid config {clip_path(source)}: vector_index must be one of "
            f"{', '.join(VECTOR_INDEX_KINDS)} (got {clip_repr(vector_index)})"
        )
    values.update(_parse_parsers(top.pop_section("parsers")))
    values.update(_parse_contextual(top.pop_section("contextual")))
    return IndexSettings(**values)


def _parse_index_dir(top: _Section) -> Path | None:
    def index_dir(value: Any, path: str) -> Path:
        # relative to the directory of the config file that names it, like [eval].golden
        return config_path(top.source, "index_dir", _text(value, path), flag("index-dir"))

    return top.pop("index_dir", index_dir)


def _parse_parsers(sec: _Section | None) -> dict[str, Any]:
    """``[parsers]``: the ``parsers`` of :class:`IndexSettings` when ``enabled`` is set."""
    if sec is None:
        return {}
    values = sec.take({"parsers": _STRINGS}, names={"parsers": "enabled"})
    sec.finish()
    parsers: tuple[str, ...] = values.get("parsers", IndexSettings().parsers)
    if not parsers:
        raise GrooveError(
            f"invalid config {clip_path(sec.source)}: [parsers].enabled cannot be empty"
        )
    seen: set[str] = set()
    for pid in parsers:
        low = pid.lower()
        if low not in KNOWN_PARSERS:
            raise GrooveError(
                f"invalid config {clip_path(sec.source)}: unknown parser {clip_repr(pid)} in "
                "[parsers].enabled "
                f"(known: {', '.join(KNOWN_PARSERS)})"
            )
        if low in seen:
            raise GrooveError(
                f"invalid config {clip_path(sec.source)}: parser {clip_repr(pid)} listed twice"
            )
        seen.add(low)
    return {"parsers": tuple(p.lower() for p in parsers)}


def _parse_contextual(sec: _Section | None) -> dict[str, Any]:
    """``[contextual]``: ``enabled`` and ``full_text``, as :class:`IndexSettings` fields."""
    if sec is None:
        return {}
    values = sec.take(
        {"contextual": read_bool, "contextual_full_text": read_bool},
        names={"contextual": "enabled", "contextual_full_text": "full_text"},
    )
    sec.finish()
    return values


def _parse_search(sec: _Section | None, fixed: dict[str, Any]) -> SearchSettings:
    """``[search]``; ``fixed`` holds what is set outside the table (the reranker)."""
    if sec is None:
        return SearchSettings(**fixed)
    values = sec.take({"min_confidence_ratio": _number(0.0, 1e9)})
    values["fusion"] = _parse_fusion(sec.pop_section("fusion"))
    values["mmr"] = _parse_mmr(sec.pop_section("mmr"))
    values["parent_retriever"] = _parse_parent(sec.pop_section("parent_retriever"))
    values.update(sec.take(_SEARCH_SWITCHES))
    sec.finish()
    return SearchSettings(**fixed, **values)


def _fail_under(value: Any, path: str) -> tuple[tuple[str, float], ...]:
    from pytest_groove.scoring.floors import read_floors_setting

    return read_floors_setting(value, path)


def _parse_eval(sec: _Section | None) -> EvalSettings:
    if sec is None:
        return EvalSettings()
    source = sec.source

    def golden(value: Any, path: str) -> Path:
        # relative to the directory of the config file that names it
        flags = flag("golden")
        return config_path(source, "[eval].golden", _text(value, path), flags)

    def baseline_file(value: Any, path: str) -> Path:
        flags = flag("baseline-file")
        return config_path(source, "[eval].baseline_file", _text(value, path), flags)

    readers = {
        "golden": golden,
        "history_size": _whole(1, 10_000),
        "k_values": _WHOLES,
        "regression_threshold": _UNIT,
        "significance": _number(1e-9, 0.999999),
        "fail_under": _fail_under,
        "metrics": read_metric_names,
        "baseline_file": baseline_file,
        "strict": read_bool,
    }
    ev = EvalSettings(**sec.take(readers))
    sec.finish()
    check_k_values(ev.k_values, f"config {clip_path(sec.source)}: [eval]")
    return ev


def read_config_bytes(kb: Path | None, config: Path | None = None) -> tuple[Path, bytes] | None:
    """The config file's path and bytes, read as :func:`load_settings` reads them
    (None: no ``--config`` and no ``<kb>/groove.toml``): the one read of the file, for
    a caller that rewrites it (``groove floors --raise``) as much as for the settings."""
    if config is not None:
        # a path the OS would refuse (a NUL, a name the locale cannot write) is one line
        check_os_path(config, "config file", flag("config"), require_utf8=False)
        try:
            return config, read_regular_file(config, CONFIG_CAP)
        except FileNotFoundError:
            raise GrooveError(
                f"config file not found: {clip_path(config)} (check {flag('config')})"
            ) from None
        except OSError as exc:
            raise_if_limit(exc, config)
            raise GrooveError(
                f"could not read config file {clip_path(config)}: {exc.strerror}"
            ) from None
    if kb is None:
        return None
    path = kb / CONFIG_FILE_NAME
    own = read_guarded(path, "config file", CONFIG_CAP)
    return None if own is None else (path, own)


def config_text(raw: bytes) -> str:
    """The config's text: UTF-8, line endings as written, a byte-order mark (which
    Windows editors write, and TOML parsers refuse) dropped."""
    return raw.decode("utf-8").removeprefix("\ufeff")


def load_settings(kb: Path | None, config: Path | None = None) -> Settings:
    """Read ``groove.toml`` (explicit path, else ``<kb>/groove.toml``) or use defaults.

    The KB's own ``groove.toml`` is written by whoever writes the KB, so it is read
    defensively (no symlink, hard link or non-regular file, at most 1 MiB) and any
    ``index_dir`` or ``[eval].golden`` in a config file that lives inside the KB must
    resolve inside the KB; flags may point anywhere.
    """
    return settings_from(read_config_bytes(kb, config), kb)


def settings_from(read: tuple[Path, bytes] | None, kb: Path | None) -> Settings:
    """The settings of a config file's bytes as :func:`read_config_bytes` gave them
    (None: the defaults); ``kb``: the knowledge base a config inside it must stay in."""
    if read is None:
        return Settings()
    path, raw = read
    try:
        text = config_text(raw)
        data = tomllib.loads(text)
    except RecursionError:
        raise GrooveError(
            f"invalid config {clip_path(path)}: not valid TOML (nested too deeply)"
        ) from None
    except ValueError as exc:
        # TOMLDecodeError and UnicodeDecodeError are ValueErrors; tomllib also lets
        # int() refuse an integer of more than 4,300 digits
        if isinstance(exc, tomllib.TOMLDecodeError) and has_conflict(text):
            # the parser names the line of the first marker as "invalid statement"
            raise GrooveError(
                f"invalid config {clip_path(path)}: a merge conflict was left in the file "
                f"(conflict markers at {line_list(conflict_marker_lines(text))}), so it is "
                "not valid TOML: resolve the conflict, keeping the settings of both sides "
                "you want, and delete the marker lines"
            ) from None
        reason = conversion_reason(exc) or (
            str(exc) if isinstance(exc, tomllib.TOMLDecodeError) else clip(str(exc))
        )
        raise GrooveError(f"invalid config {clip_path(path)}: not valid TOML ({reason})") from None
    settings = parse_settings(data, path.resolve())
    if kb is not None:
        _keep_inside_kb(settings, kb, path)
    return settings


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (OSError, RuntimeError, ValueError):
        return False
    return True


def _keep_inside_kb(settings: Settings, kb: Path, source: Path) -> None:
    """A config file inside the KB may not place the index or the golden file outside it."""
    try:
        root = kb.resolve()
    except (OSError, RuntimeError):
        return  # the doors report an unusable KB path themselves
    if not _inside(source, root):
        return
    for key, value, option in (
        ("index_dir", settings.index.index_dir, flag("index-dir")),
        ("[eval].golden", settings.eval.golden, flag("golden")),
        ("[eval].baseline_file", settings.eval.baseline_file, flag("baseline-file")),
    ):
        if value is not None and not _inside(value, root):
            raise GrooveError(
                f"invalid config {clip_path(source)}: {key} points outside the knowledge base "
                f"({clip(str(value))}); a groove.toml inside the KB may only name places "
                f"inside it, so pass {option} to use another place"
            )


# --------------------------------------------------------------------------- overrides


@dataclass(frozen=True)
class SearchOverrides:
    """Per-run pipeline overrides from flags (None = keep the config value)."""

    reranker: str | None = None
    mmr: bool | None = None
    mmr_lambda: float | None = None
    mmr_same_doc_penalty: float | None = None
    parent_retriever: bool | None = None


def _unit_interval(name: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or not 0.0 <= value <= 1.0):
        raise UsageError(f"{name} must be a number in [0, 1] (got {value})")


def apply_search_overrides(search: SearchSettings, ov: SearchOverrides) -> SearchSettings:
    """Return the effective search settings after command-line overrides."""
    _unit_interval(f"{flag('mmr-lambda')}", ov.mmr_lambda)
    _unit_interval(f"{flag('mmr-same-doc-penalty')}", ov.mmr_same_doc_penalty)
    mmr = search.mmr
    if ov.mmr is not None:
        mmr = replace(mmr, enabled=ov.mmr)
    if ov.mmr_lambda is not None:
        mmr = replace(mmr, lambda_=ov.mmr_lambda)
    if ov.mmr_same_doc_penalty is not None:
        mmr = replace(mmr, same_doc_penalty=ov.mmr_same_doc_penalty)
    parent = search.parent_retriever
    if ov.parent_retriever is not None:
        parent = replace(parent, enabled=ov.parent_retriever)
    reranker = ov.reranker if ov.reranker is not None else search.reranker
    return replace(search, mmr=mmr, parent_retriever=parent, reranker=reranker)


def with_overrides(
    settings: Settings,
    *,
    model: str | None = None,
    index_dir: Path | None = None,
    overrides: SearchOverrides | None = None,
    vector_index: str | None = None,
) -> Settings:
    """Settings after the per-run choices every door offers (model, index dir, pipeline)."""
    index = settings.index
    if model:
        index = replace(index, model=model)
    if vector_index is not None:
        index = replace(index, vector_index=vector_index)
    if index_dir is not None:
        index = replace(index, index_dir=index_dir)
    search = settings.search
    if overrides is not None:
        search = apply_search_overrides(search, overrides)
    return replace(settings, index=index, search=search)


def parse_bool_flag(name: str, text: str) -> bool:
    """``--mmr true`` style values: true/false/yes/no/1/0/on/off."""
    low = text.strip().lower()
    if low in ("true", "yes", "1", "on"):
        return True
    if low in ("false", "no", "0", "off"):
        return False
    raise UsageError(f"{name} takes true or false (got {clip_repr(text)})")


def parse_k_list(name: str, text: str) -> tuple[int, ...]:
    """``--k 1,5,10`` → (1, 5, 10); every k a whole number from 1 to :data:`K_MAX`,
    written in the digits 0-9, with no empty item (``1,,5``)."""
    try:
        parts = split_option_list(name, text, "whole numbers", "1,5,10")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    values: list[int] = []
    for part in parts:
        try:
            k = ascii_int(part)
        except ValueError:
            raise UsageError(
                f"{name}: {clip_repr(part)} is not a whole number (use e.g. {name} 1,5,10)"
            ) from None
        if k < 1:
            raise UsageError(f"{name}: every k must be at least 1 (got {int_text(k)})")
        if k > K_MAX:  # results are capped anyway; a longer k cannot be printed
            raise UsageError(f"{name}: every k must be at most {K_MAX:,} (got {int_text(k)})")
        values.append(k)
    return tuple(values)


def normalise_k_values(k_values: tuple[int, ...]) -> tuple[int, ...]:
    """Cap each k at the retrieval cap, then sort ascending and de-duplicate."""
    return tuple(sorted({min(k, SEARCH_LIMIT_MAX) for k in k_values}))


#: the settings records live in :mod:`pytest_groove.settings.records`; re-exported here
__all__ = [
    "CONFIG_FILE_NAME",
    "DEFAULT_EXCLUDE_DIRS",
    "DEFAULT_VECTOR_INDEX",
    "KNOWN_PARSERS",
    "K_MAX",
    "SEARCH_LIMIT_MAX",
    "VECTOR_INDEX_KINDS",
    "EvalSettings",
    "FusionParams",
    "IndexSettings",
    "MmrSettings",
    "ParentRetrieverSettings",
    "RetrieverSettings",
    "SearchSettings",
    "Settings",
]
