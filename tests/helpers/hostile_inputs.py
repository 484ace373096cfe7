"""Generators of hostile input for issue 22's second round (see
tests/faults/test_hostile_values.py).

Each strategy draws a few small choices and builds the (possibly large) text from
them, so hypothesis stores little and shrinks fast.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# --------------------------------------------------------------------------- long numbers

_SIGNS = st.sampled_from(["", "-", "+"])


@st.composite
def yaml_long_integer(draw: st.DrawFn) -> str:
    """A YAML 1.1 integer of more than 4,300 decimal digits, in any of its spellings."""
    form = draw(st.sampled_from(["decimal", "hex", "octal", "binary", "sexagesimal"]))
    sign = draw(_SIGNS)
    extra = draw(st.integers(0, 900))
    lead = draw(st.sampled_from("123456789"))
    if form == "decimal":
        body = lead + draw(st.sampled_from("0123456789")) * (4300 + extra)
    elif form == "hex":
        body = "0x" + lead + draw(st.sampled_from("0123456789abcdefABCDEF_")) * (3590 + extra)
    elif form == "octal":
        body = "0" + draw(st.sampled_from("1234567")) + "7" * (4770 + extra)
    elif form == "binary":
        body = "0b1" + draw(st.sampled_from("01_")) * (14300 + extra)
    else:
        body = lead + ":" + ":".join([draw(st.sampled_from(["59", "7", "00", "5_9"]))] * 2430)
    return sign + body


@st.composite
def yaml_odd_float(draw: st.DrawFn) -> str:
    """Floats past the float range or spelled in ways the float constructor refuses."""
    return draw(
        st.sampled_from(
            [
                "1e99999",
                "-1.5e999999",
                "!!float 0x1p99999",
                "!!float 0x" + "f" * 4000,
                "!!float " + "9" * 5000,
                "!!float 1" + ":59" * 3000,
                ".inf",
                "-.Inf",
                ".NaN",
                "!!float 1:2:",
            ]
        )
    )


@st.composite
def toml_long_integer(draw: st.DrawFn) -> str:
    """A TOML integer of more than 4,300 decimal digits (decimal, hex, octal, binary)."""
    form = draw(st.sampled_from(["decimal", "hex", "octal", "binary"]))
    extra = draw(st.integers(0, 900))
    if form == "decimal":
        return draw(st.sampled_from(["", "-", "+"])) + "9" * (4301 + extra)
    if form == "hex":
        return "0x" + draw(st.sampled_from(["f", "1_f", "Ab"])) * (3600 + extra)
    if form == "octal":
        return "0o" + draw(st.sampled_from(["7", "1_7"])) * (4800 + extra)
    return "0b" + draw(st.sampled_from(["1", "1_0"])) * (14400 + extra)


# --------------------------------------------------------------------------- YAML tags

TAGS = (
    "!!bool",
    "!!int",
    "!!float",
    "!!timestamp",
    "!!binary",
    "!!set",
    "!!omap",
    "!!pairs",
    "!!map",
    "!!seq",
    "!!str",
    "!!null",
    "!!merge",
    "!!value",
    "!!python/object:os.system",
    "!custom",
)

_PLAIN = st.text(alphabet="abcTFYNyn019-:._+ ~@%=", min_size=0, max_size=12).map(str.strip)
_NODES = st.one_of(
    _PLAIN,
    st.text(max_size=12).map(json.dumps),
    st.sampled_from(
        [
            "''",
            '""',
            "[]",
            "{}",
            "[a, 1]",
            "{a: 1}",
            "[{a: 1}, b]",
            "[[a, b]]",
            "{? [a]: 1}",
            "2024-02-30",
            "2024-01-01 10:00:00 +99:99",
            "0000-01-01",
            "1:2:3",
            "0x",
            "0b",
            "=",
            "@@@",
            "aGVsbG8=",
            "é",
        ]
    ),
)


@st.composite
def tagged_node(draw: st.DrawFn) -> str:
    """A tag on a node that is (most often) not of that type."""
    return f"{draw(st.sampled_from(TAGS))} {draw(_NODES)}".rstrip()


# --------------------------------------------------------------------------- golden files

#: a golden file with one slot for a value, by where the slot is
GOLDEN_VALUE_SLOTS = (
    "queries:\n  - query: {v}\n    expected:\n      - path: a.md\n",
    "queries:\n  - query: q\n    id: {v}\n    expected:\n      - path: a.md\n",
    "queries:\n  - query: q\n    expected:\n      - path: {v}\n",
    "queries:\n  - query: q\n    expected:\n      - path: a.md\n        heading: {v}\n",
    "queries:\n  - query: q\n    tags: [{v}]\n    expected:\n      - path: a.md\n",
    "queries:\n  - query: q\n    expected: {v}\n",
    "queries:\n  - query: q\n    expected:\n      - {v}\n",
    "queries: {v}\n",
    "queries:\n  - {v}\n",
    "defaults:\n  limit: {v}\nqueries:\n  - query: q\n    expected:\n      - path: a.md\n",
    "defaults:\n  rerank: {v}\nqueries:\n  - query: q\n    expected:\n      - path: a.md\n",
    "defaults: {v}\nqueries:\n  - query: q\n    expected:\n      - path: a.md\n",
    "queries:\n  - query: q\n    expected:\n      - path: a.md\nextra: {v}\n",
    "{v}\n",
)
#: the same, with the slot as a mapping key (explicit `? key` form: no length limit)
GOLDEN_KEY_SLOTS = (
    "queries:\n  - query: q\n    expected:\n      - path: a.md\n? {v}\n: 1\n",
    "? {v}\n: 1\nqueries:\n  - query: q\n    expected:\n      - path: a.md\n",
    "queries:\n  - query: q\n    ? {v}\n    : 1\n    expected:\n      - path: a.md\n",
    "queries:\n  - query: q\n    expected:\n      - path: a.md\n        ? {v}\n        : x\n",
    "defaults:\n  ? {v}\n  : 1\nqueries:\n  - query: q\n    expected:\n      - path: a.md\n",
)


def fill(template: str, value: str) -> str:
    return template.replace("{v}", value)


@st.composite
def golden_with(draw: st.DrawFn, values: st.SearchStrategy[str]) -> str:
    template = draw(st.sampled_from(GOLDEN_VALUE_SLOTS + GOLDEN_KEY_SLOTS))
    return fill(template, draw(values))


# --------------------------------------------------------------------------- paths


@st.composite
def os_refused_path(draw: st.DrawFn) -> str:
    """A path the OS refuses: a name over 255 bytes, over 4,096 bytes in all, a NUL."""
    form = draw(st.sampled_from(["long-name", "long-path", "nul", "long-utf8-name"]))
    head = draw(st.sampled_from(["", "docs/", "a/b/", "notes/x/"]))
    if form == "long-name":
        return head + "n" * draw(st.integers(256, 5000)) + ".md"
    if form == "long-utf8-name":  # 86 characters of 3 bytes: 258 bytes
        return head + "\u20ac" * draw(st.integers(86, 400)) + ".md"
    if form == "long-path":
        part = "d" * draw(st.integers(1, 255))
        count = 4097 // (len(part) + 1) + draw(st.integers(1, 5))
        return "/".join([part] * count) + "/a.md"
    where = draw(st.integers(0, 10))
    name = head + "a.md"
    return name[:where] + "\x00" + name[where:]


# --------------------------------------------------------------------------- config files

CONFIG_VALUE_SLOTS = (
    "model = {v}\n",
    "reranker = {v}\n",
    "exclude_dirs = [{v}]\n",
    'exclude_headings = ["a", {v}]\n',
    "index_dir = {v}\n",
    "vector_index = {v}\n",
    "unknown = {v}\n",
    "[search]\nmin_confidence_ratio = {v}\n",
    "[search]\nfts_query_version = {v}\n",
    "[search]\nnote_order = {v}\n",
    "[search.fusion]\nrrf_k = {v}\n",
    "[search.fusion]\nbm25_heading_weight = {v}\n",
    "[search.mmr]\nlambda = {v}\n",
    "[search.parent_retriever]\nmax_expanded_tokens = {v}\n",
    "[eval]\nhistory_size = {v}\n",
    "[eval]\nk_values = [1, {v}]\n",
    "[eval]\nregression_threshold = {v}\n",
    "[eval]\ngolden = {v}\n",
    "[parsers]\nenabled = [{v}]\n",
    "[contextual]\nenabled = {v}\n",
    "x = {{ a = {v} }}\n",
)
CONFIG_PATH_SLOTS = ("index_dir = {v}\n", "[eval]\ngolden = {v}\n")


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escapes are TOML's, ``\\u0000`` included)."""
    return json.dumps(text, ensure_ascii=True)


# --------------------------------------------------------------------------- histories


def dump_with_repeats(value: Any, repeat_at: set[int], junk: str, counter: list[int]) -> str:
    """``value`` as JSON, the objects numbered in ``repeat_at`` (preorder) written with
    their first key twice: first with ``junk``, then with the real value (which reads)."""
    if isinstance(value, dict):
        number = counter[0]
        counter[0] += 1
        pairs = [
            f"{json.dumps(key)}:{dump_with_repeats(item, repeat_at, junk, counter)}"
            for key, item in value.items()
        ]
        if number in repeat_at and value:
            pairs.insert(0, f"{json.dumps(next(iter(value)))}:{junk}")
        return "{" + ",".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump_with_repeats(v, repeat_at, junk, counter) for v in value) + "]"
    return json.dumps(value)


JSON_JUNK = st.sampled_from(
    ["null", "0", "-1", '"x"', "[]", "{}", '{"a":1}', "true", '"2020-01-01T00:00:00Z"', "1e999"]
)


@st.composite
def repeated_history(draw: st.DrawFn, runs: list[dict[str, Any]]) -> tuple[bytes, set[str]]:
    """A history whose keys repeat: ``runs`` split over copies of the ``runs`` key (each
    run in at least one copy, some in several), keys repeated inside runs and at the top.

    Returns the bytes and the timestamps of every run the file holds.
    """
    copies = draw(st.integers(1, 3))
    homes = [draw(st.sets(st.integers(0, copies - 1), min_size=1, max_size=copies)) for _ in runs]
    inner = draw(st.lists(st.booleans(), min_size=len(runs), max_size=len(runs)))
    junk = draw(JSON_JUNK)
    if copies == 1 and not any(inner):
        inner[0] = True  # at least one key written twice somewhere
    texts = []
    for run, repeat in zip(runs, inner, strict=True):
        places = {draw(st.integers(0, 6))} if repeat else set()
        texts.append(dump_with_repeats(run, places, junk, [0]))
    lists = []
    for copy in range(copies):
        held = [texts[i] for i, home in enumerate(homes) if copy in home]
        lists.append('"runs":[' + ",\n".join(held) + "]")
    head = ['"format":2']
    if draw(st.booleans()):
        head.insert(0, '"format":' + junk)
    if draw(st.booleans()):
        lists.insert(draw(st.integers(0, len(lists))), '"runs":' + draw(JSON_JUNK))
    body = "{" + ",\n".join(head + lists) + "}\n"
    stamps = {str(run["timestamp"]) for run in runs}
    return body.encode("utf-8"), stamps
