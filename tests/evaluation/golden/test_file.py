"""Golden file: location, guarded reading, schema validation, ids, hash, node ids."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.file import (
    DEFAULT_GOLDEN_NAME,
    derive_query_id,
    golden_hash,
    load_golden,
    node_id_for,
    node_ids,
    resolve_golden_path,
)
from pytest_groove.files.guarded_io import GOLDEN_CAP
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet

MINIMAL = """\
queries:
  - query: "How are chunks deduplicated?"
    expected:
      - path: "src/indexer.rs"
"""

FULL = """\
defaults:
  limit: 5
  rerank: true
queries:
  - id: rrf-basics            # optional, used as the diff row key
    query: "What does the k parameter in RRF do?"
    expected:
      - path: "docs/ARCHITECTURE.md"
        heading: "Data flow"
      - path: "src/db.rs"
    tags: [smoke, fusion]

  - query: "How are chunks deduplicated?"
    expected:
      - path: "src/indexer.rs"
"""


def write(tmp_path: Path, text: str | bytes, name: str = DEFAULT_GOLDEN_NAME) -> Path:
    target = tmp_path / name
    if isinstance(text, str):
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    else:
        target.write_bytes(text)
    return target


def load(tmp_path: Path, text: str | bytes) -> GoldenSet:
    return load_golden(write(tmp_path, text), tmp_path)


def load_error(tmp_path: Path, text: str | bytes) -> str:
    """Load ``text`` expecting failure; check the common shape; return the message."""
    target = write(tmp_path, text)
    with pytest.raises(GrooveError) as info:
        load_golden(target, tmp_path)
    message = info.value.message
    assert message.startswith(f"failed to parse golden file: {target}: "), message
    assert "\n" not in message
    assert info.value.exit_code == 1
    return message


def doc(query: str = "", **fields: object) -> str:
    """A one-query golden document; ``fields`` replace parts of the query mapping."""
    mapping: dict[str, object] = {"query": query or "alpha beta", "expected": [{"path": "a.md"}]}
    mapping.update(fields)
    return yaml.safe_dump({"queries": [mapping]}, allow_unicode=True, sort_keys=False)


# ------------------------------------------------------------------- location


def test_resolve_precedence(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    cli = Path("cli.yml")
    config = tmp_path / "conf" / "golden.yml"
    assert resolve_golden_path(kb, cli, config) == cli
    assert resolve_golden_path(kb, None, config) == config
    assert resolve_golden_path(kb, None, None) == kb / ".groove-eval.yml"
    assert DEFAULT_GOLDEN_NAME == ".groove-eval.yml"


def test_missing_golden_exact_message(tmp_path: Path) -> None:
    target = tmp_path / ".groove-eval.yml"
    with pytest.raises(GrooveError) as info:
        load_golden(target, tmp_path)
    assert info.value.message == (
        f"no golden file at {target} (hint: `groove init --kb-path {tmp_path}` writes a "
        "starter .groove-eval.yml listing the KB's notes; or pass --golden)"
    )


# ------------------------------------------------------------------- guarded reading


def test_golden_padded_past_cap_is_refused(tmp_path: Path) -> None:
    text = MINIMAL + "#" * GOLDEN_CAP + "\n"
    target = write(tmp_path, text)
    with pytest.raises(GrooveError) as info:
        load_golden(target, tmp_path)
    assert "refusing to read the golden file" in info.value.message
    assert "over the 1,048,576 byte limit" in info.value.message
    assert "split the golden set into files under the limit" in info.value.message


def test_golden_of_exactly_cap_loads(tmp_path: Path) -> None:
    padding = GOLDEN_CAP - len(MINIMAL.encode()) - 1
    golden = load(tmp_path, MINIMAL + "#" * padding + "\n")
    assert len(golden.queries) == 1


@pytest.mark.skipif(os.name == "nt", reason="symlinks are refused on Unix only")
def test_golden_symlink_is_refused(tmp_path: Path) -> None:
    real = write(tmp_path, MINIMAL, "real.yml")
    link = tmp_path / ".groove-eval.yml"
    link.symlink_to(real)
    with pytest.raises(GrooveError, match=r"refusing to read the golden file: .*not a regular"):
        load_golden(link, tmp_path)


def test_golden_hard_link_is_refused(tmp_path: Path) -> None:
    real = write(tmp_path, MINIMAL, "elsewhere.yml")
    alias = tmp_path / ".groove-eval.yml"
    os.link(real, alias)
    with pytest.raises(GrooveError, match=r"more than one name \(hard link\)"):
        load_golden(alias, tmp_path)


# ------------------------------------------------------------------- valid files


def test_minimal_golden(tmp_path: Path) -> None:
    golden = load(tmp_path, MINIMAL)
    assert golden.path == str(tmp_path / ".groove-eval.yml")
    (query,) = golden.queries
    assert query.query == "How are chunks deduplicated?"
    assert query.id == "How are chunks deduplicated?"
    assert not query.explicit_id
    assert query.expected == (ExpectedEntry("src/indexer.rs", None),)
    assert query.tags == ()


def test_full_golden(tmp_path: Path) -> None:
    golden = load(tmp_path, FULL)
    first, second = golden.queries
    assert first.id == "rrf-basics" and first.explicit_id
    assert first.expected == (
        ExpectedEntry("docs/ARCHITECTURE.md", "Data flow"),
        ExpectedEntry("src/db.rs", None),
    )
    assert first.tags == ("smoke", "fusion")
    assert second.id == "How are chunks deduplicated?"


def test_query_lines_point_at_each_query(tmp_path: Path) -> None:
    golden = load(tmp_path, FULL)
    assert [q.line for q in golden.queries] == [5, 13]
    lines = FULL.splitlines()
    assert "id: rrf-basics" in lines[4]
    assert "query:" in lines[12]


def test_flow_style_lines(tmp_path: Path) -> None:
    text = (
        "queries:\n\n\n"
        "  - {query: one, expected: [{path: a}]}\n"
        "  - {query: two, expected: [{path: b}]}\n"
    )
    assert [q.line for q in load(tmp_path, text).queries] == [4, 5]


def test_query_text_is_not_trimmed(tmp_path: Path) -> None:
    (query,) = load(tmp_path, doc("  padded query  ")).queries
    assert query.query == "  padded query  "
    assert query.id == "  padded query  "


def test_nulls_are_absent_values(tmp_path: Path) -> None:
    text = """\
    defaults:
    queries:
      - query: alpha
        id: null
        tags: null
        expected:
          - path: a.md
            heading: null
    """
    (query,) = load(tmp_path, text).queries
    assert query.id == "alpha" and not query.explicit_id
    assert query.tags == ()
    assert query.expected == (ExpectedEntry("a.md", None),)


def test_defaults_are_parsed_and_ignored(tmp_path: Path) -> None:
    with_defaults = load(tmp_path, MINIMAL + "defaults: {limit: 3, rerank: false}\n")
    without = load(tmp_path, MINIMAL)
    assert with_defaults.queries == without.queries


def test_empty_explicit_id_is_valid(tmp_path: Path) -> None:
    (query,) = load(tmp_path, doc(id="")).queries
    assert query.id == "" and query.explicit_id


def test_path_only_and_heading_entry_for_same_file_are_not_duplicates(tmp_path: Path) -> None:
    (query,) = load(
        tmp_path, doc(expected=[{"path": "a.md"}, {"path": "a.md", "heading": "Intro"}])
    ).queries
    assert len(query.expected) == 2


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    golden = load(tmp_path, b"\xef\xbb\xbf" + MINIMAL.encode())
    assert len(golden.queries) == 1


def test_anchors_and_merge_keys_work(tmp_path: Path) -> None:
    text = """\
    queries:
      - query: first
        expected: &shared
          - path: a.md
      - query: second
        expected: *shared
      - <<: {query: third}
        expected: [{path: b.md}]
    """
    first, second, third = load(tmp_path, text).queries
    assert first.expected == second.expected == (ExpectedEntry("a.md"),)
    assert third.query == "third"


def test_queries_may_repeat_text(tmp_path: Path) -> None:
    text = (
        "queries:\n"
        "  - {query: same, expected: [{path: a}]}\n"
        "  - {query: same, expected: [{path: b}]}\n"
    )
    assert len(load(tmp_path, text).queries) == 2


def test_exclusion_with_positive_part_is_fine(tmp_path: Path) -> None:
    (query,) = load(tmp_path, doc("rust -async")).queries
    assert query.query == "rust -async"


# ------------------------------------------------------------------- reference validation


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (
            doc(expected=[{"path": "a.md", "relevance": 2}]),
            "queries[0].expected[0]: unknown field `relevance`, "
            "expected one of `path`, `heading`, `grade`",
        ),
        (
            doc(weight=1),
            "queries[0]: unknown field `weight`, expected one of `query`, `expected`, `id`, `tags`",
        ),
        ("version: 2\n" + MINIMAL, "unknown field `version`, expected `queries` or `defaults`"),
        (
            "defaults: {limit: 3, top_k: 4}\n" + MINIMAL,
            "defaults: unknown field `top_k`, expected `limit` or `rerank`",
        ),
    ],
)
def test_unknown_fields_at_every_level(tmp_path: Path, text: str, cause: str) -> None:
    assert cause in load_error(tmp_path, text)


def test_relevance_key_matches_seed_wording(tmp_path: Path) -> None:
    message = load_error(tmp_path, doc(expected=[{"path": "a.md", "relevance": 2}]))
    assert "unknown field `relevance`, expected one of `path`, `heading`, `grade`" in message


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("defaults: {limit: 3}\n", "missing field `queries`"),
        ("queries:\n  - expected: [{path: a.md}]\n", "queries[0]: missing field `query`"),
        ("queries:\n  - query: alpha\n", "queries[0]: missing field `expected`"),
        (
            "queries:\n  - query: alpha\n    expected: [{heading: X}]\n",
            "queries[0].expected[0]: missing field `path`",
        ),
    ],
)
def test_missing_fields(tmp_path: Path, text: str, cause: str) -> None:
    assert cause in load_error(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("queries: {a: 1}\n", "queries: invalid type: a mapping, expected a list"),
        ("queries: null\n", "queries: invalid type: null, expected a list"),
        ("- 1\n", "invalid type: a list, expected a mapping"),
        ("just text\n", "invalid type: a string, expected a mapping"),
        ("queries: [alpha]\n", "queries[0]: invalid type: string `alpha`, expected a mapping"),
        (doc(expected=None), "queries[0].expected: invalid type: null, expected a list"),
        (doc(expected="a.md"), "queries[0].expected: invalid type: string `a.md`, expected a list"),
        (doc(expected=["a.md"]), "queries[0].expected[0]: invalid type: string `a.md`"),
        (doc(tags="x"), "queries[0].tags: invalid type: string `x`, expected a list of strings"),
        (doc(tags=["ok", 3]), "queries[0].tags[1]: invalid type: integer `3`, expected a string"),
        ("defaults: {rerank: 1}\n" + MINIMAL, "defaults.rerank: invalid type: integer `1`"),
        ("defaults: {limit: yes}\n" + MINIMAL, "defaults.limit: invalid value: boolean `true`"),
        ("defaults: {limit: -1}\n" + MINIMAL, "defaults.limit: invalid value: integer `-1`"),
        ("defaults: [1]\n" + MINIMAL, "defaults: invalid type: a list"),
    ],
)
def test_wrong_types(tmp_path: Path, text: str, cause: str) -> None:
    assert cause in load_error(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "where", "found"),
    [
        (
            "queries:\n  - query: 42\n    expected: [{path: a}]\n",
            "queries[0].query",
            "integer `42`",
        ),
        ("queries:\n  - query: true\n    expected: [{path: a}]\n", "queries[0].query", "boolean"),
        (
            "queries:\n  - query: x\n    id: 7\n    expected: [{path: a}]\n",
            "queries[0].id",
            "integer",
        ),
        ("queries:\n  - query: x\n    expected: [{path: 1.5}]\n", ".expected[0].path", "floating"),
        ("queries:\n  - query: x\n    expected: [{path: 2024-01-02}]\n", ".path", "date"),
        ("queries:\n  - query: x\n    expected: [{path: a, heading: 3}]\n", ".heading", "integer"),
        ("queries:\n  - query: [a]\n    expected: [{path: a}]\n", "queries[0].query", "a list"),
    ],
)
def test_non_string_scalars_are_refused_not_coerced(
    tmp_path: Path, text: str, where: str, found: str
) -> None:
    message = load_error(tmp_path, text)
    assert where in message
    assert f"invalid type: {found}" in message
    assert "expected a string" in message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("queries:\n  - query: [unclosed\n    expected: x\n", ("invalid YAML", "line ")),
        (b"queries:\n  - query: caf\xe9\n", ("not valid UTF-8", "offset 23", "line 2")),
        ("queries: !!python/object/apply:os.system [echo hi]\n", ("invalid YAML",)),
        (
            "queries:\n  - query: x\n    expected: [{path: 2024-13-45}]\n",
            ("2024-13-45", "line 3"),
        ),
    ],
    ids=["syntax-error-with-position", "invalid-utf8", "unsafe-tag", "impossible-date"],
)
def test_unparsable_yaml_is_one_line_saying_where(
    tmp_path: Path, text: str | bytes, said: tuple[str, ...]
) -> None:
    message = load_error(tmp_path, text)
    for words in said:
        assert words in message


def test_error_names_the_line(tmp_path: Path) -> None:
    text = MINIMAL + "  - query: second\n    expected:\n      - path: b.md\n        weight: 1\n"
    message = load_error(tmp_path, text)
    assert message.endswith("at line 8")
    assert "queries[1].expected[0]: unknown field `weight`" in message


# ------------------------------------------------------------------- deliberate additions


def test_refuses_empty_queries_list(tmp_path: Path) -> None:
    assert "queries: the list is empty" in load_error(tmp_path, "queries: []\n")


def test_refuses_empty_expected_list(tmp_path: Path) -> None:
    assert "queries[0].expected: the list is empty" in load_error(tmp_path, doc(expected=[]))


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_refuses_empty_query_text(tmp_path: Path, text: str) -> None:
    message = load_error(
        tmp_path, yaml.safe_dump({"queries": [{"query": text, "expected": [{"path": "a"}]}]})
    )
    assert "queries[0].query: the query text is empty" in message


@pytest.mark.parametrize("text", ["-async", "-async -tokio", '-"two words"'])
def test_refuses_query_with_only_exclusions(tmp_path: Path, text: str) -> None:
    message = load_error(tmp_path, doc(text))
    assert "queries[0].query:" in message
    assert "nothing to search for" in message


def test_refuses_duplicate_explicit_ids(tmp_path: Path) -> None:
    text = """\
    queries:
      - id: same
        query: first
        expected: [{path: a.md}]
      - id: other
        query: second
        expected: [{path: b.md}]
      - id: same
        query: third
        expected: [{path: c.md}]
    """
    message = load_error(tmp_path, text)
    assert "queries[2].id: duplicate id `same`" in message
    assert "queries[0]" in message and "line 2" in message


def test_derived_ids_may_collide(tmp_path: Path) -> None:
    prefix = "x" * 32
    text = doc(prefix + " one").replace(
        "queries:\n", "queries:\n- {query: '" + prefix + " two', expected: [{path: b}]}\n", 1
    )
    first, second = load(tmp_path, text).queries
    assert first.id == second.id == prefix


@pytest.mark.parametrize(
    "entries",
    [
        [{"path": "a.md"}, {"path": "a.md"}],
        [{"path": "a.md", "heading": "Data flow"}, {"path": "a.md", "heading": "  data FLOW "}],
        [{"path": "b.md"}, {"path": "a.md", "heading": "X"}, {"path": "a.md", "heading": "x"}],
    ],
)
def test_refuses_duplicate_expected_entries(tmp_path: Path, entries: list[dict[str, str]]) -> None:
    message = load_error(tmp_path, doc(expected=entries))
    assert "repeats queries[0].expected[" in message


@pytest.mark.parametrize(
    ("path", "cause"),
    [
        ("/etc/passwd", "is absolute"),
        ("C:/notes/a.md", "is absolute"),
        ("../outside.md", "contains `..`"),
        ("docs/../../outside.md", "contains `..`"),
        ("docs\\a.md", "uses backslashes; write it with `/` (`docs/a.md`)"),
        ("./docs/a.md", "empty or `.` segment"),
        ("docs//a.md", "empty or `.` segment"),
        ("docs/", "empty or `.` segment"),
        ("", "the path is empty"),
    ],
)
def test_refuses_paths_that_are_not_kb_relative(tmp_path: Path, path: str, cause: str) -> None:
    message = load_error(tmp_path, doc(expected=[{"path": path}]))
    assert "queries[0].expected[0].path: " in message
    assert cause in message


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    segments=st.lists(
        st.text("abcXYZ019-_ .", min_size=1, max_size=6).filter(
            lambda s: s.strip(".") != "" and s.strip() == s
        ),
        min_size=1,
        max_size=4,
    ),
    separators=st.lists(st.sampled_from(["\\", "\\\\", "/\\", "\\/", "/"]), min_size=4),
    lead=st.sampled_from(["", ".\\", "\\"]),
)
def test_the_backslash_fix_it_suggests_is_accepted(
    tmp_path: Path, segments: list[str], separators: list[str], lead: str
) -> None:
    # `ops\\a.md` once suggested `ops//a.md`, which is refused in turn
    path = lead + "".join(s + sep for s, sep in zip(segments, separators, strict=False))
    path = path + "end.md"
    if "\\" not in path:
        path = "x\\" + path
    message = load_error(tmp_path, doc(expected=[{"path": path}]))
    assert "uses backslashes; write it with `/` (`" in message
    fixed = message.split("(`", 1)[1].split("`)", 1)[0]
    assert load(tmp_path, doc(expected=[{"path": fixed}])).queries[0].expected[0].path == fixed


def test_absolute_path_inside_kb_suggests_relative_form(tmp_path: Path) -> None:
    inside = (tmp_path / "docs" / "a.md").resolve()
    message = load_error(tmp_path, doc(expected=[{"path": str(inside)}]))
    assert "(`docs/a.md`)" in message


def test_refuses_duplicate_keys(tmp_path: Path) -> None:
    message = load_error(
        tmp_path, "queries:\n  - query: a\n    query: b\n    expected: [{path: x}]\n"
    )
    assert "duplicate key `query`" in message
    assert "line 3" in message


# ------------------------------------------------------------------- id, hash


def test_derived_id_is_first_32_code_points() -> None:
    text = "What does the k parameter in RRF do when fused?"
    assert derive_query_id(text) == text[:32]
    assert len(derive_query_id(text)) == 32
    assert derive_query_id("short") == "short"
    assert derive_query_id("") == ""


def test_derived_id_counts_code_points_not_bytes_for_cjk(tmp_path: Path) -> None:
    text = "検索拡張生成における再ランキングの役割とは何か、そしてクロスエンコーダーはどう使うのか"
    assert len(text) > 32
    (query,) = load(tmp_path, doc(text)).queries
    assert query.id == text[:32]
    assert len(query.id) == 32
    assert len(query.id.encode("utf-8")) == 96


def test_derived_id_does_not_normalise() -> None:
    # a combining sequence counts as two code points
    text = "e\u0301" * 20
    assert derive_query_id(text) == text[:32]
    assert derive_query_id("  x  ") == "  x  "


def test_hash_is_sha256_of_raw_bytes(tmp_path: Path) -> None:
    golden = load(tmp_path, MINIMAL)
    raw = (tmp_path / ".groove-eval.yml").read_bytes()
    assert golden.hash == hashlib.sha256(raw).hexdigest()
    assert golden.hash == golden_hash(raw)
    assert len(golden.hash) == 64 and golden.hash == golden.hash.lower()


def test_hash_changes_with_a_comment_but_queries_do_not(tmp_path: Path) -> None:
    before = load(tmp_path, MINIMAL)
    after = load(tmp_path, "# a comment\n" + MINIMAL)
    assert before.hash != after.hash
    assert [q.query for q in before.queries] == [q.query for q in after.queries]


# ------------------------------------------------------------------- node ids


def _query(ident: str, text: str = "q", explicit: bool = True) -> GoldenQuery:
    return GoldenQuery(id=ident, query=text, expected=(ExpectedEntry("a"),), explicit_id=explicit)


def _derived(text: str) -> GoldenQuery:
    return GoldenQuery(id=derive_query_id(text), query=text, expected=(ExpectedEntry("a"),))


def _is_safe(node: str) -> bool:
    """What pytest's node-id syntax, ``-k`` and JUnit need: no ``[``, ``]``, ``::``,
    whitespace or control character (any other character, in any script, is kept)."""
    return (
        node != ""
        and not any(
            ch.isspace() or ch in "[]" or unicodedata.category(ch) in ("Cc", "Cf", "Cs")
            for ch in node
        )
        and "::" not in node
    )


def test_safe_explicit_id_is_kept() -> None:
    assert node_id_for(_query("rrf-basics")) == "rrf-basics"
    assert node_id_for(_query("v1.2_case")) == "v1.2_case"


@pytest.mark.parametrize(
    ("ident", "node"),
    [
        ("入社初日", "入社初日"),  # readable: pytest -k 入社初日 selects it
        ("Überblick", "Überblick"),
        ("a/b", "a/b"),
        ("a:b", "a:b"),
        ("with space", "with-space"),
        ("a[b]", "a-b"),
        ("billing [EU]", "billing-EU"),
        ("x::y", "x-y"),
        ("-k or", "-k-or"),
        ("tab\there", "tab-here"),
        ("zero\u200bwidth", "zero-width"),
    ],
)
def test_explicit_ids_escape_only_what_node_ids_forbid(ident: str, node: str) -> None:
    assert node_id_for(_query(ident)) == node


@pytest.mark.parametrize("ident", ["", ".", "..", "x" * 65, "::", " [ ] "])
def test_unusable_explicit_ids_become_slug_plus_hash(ident: str) -> None:
    node = node_id_for(_query(ident))
    assert _is_safe(node), node
    digest = hashlib.sha256(ident.encode()).hexdigest()[:8]
    assert node.endswith(digest)


def test_slug_keeps_readable_part() -> None:
    assert node_id_for(_query("Über Blick")) == "Über-Blick"
    assert node_id_for(_derived("Über Blick?")).startswith("Über-Blick-")


def test_derived_ids_sharing_32_code_points_get_distinct_node_ids() -> None:
    prefix = "How are chunks deduplicated when "
    first = _derived(prefix + "indexing?")
    second = _derived(prefix + "searching?")
    assert first.id == second.id
    assert node_id_for(first) != node_id_for(second)
    assert _is_safe(node_id_for(first)) and _is_safe(node_id_for(second))


def test_cjk_derived_node_id_is_readable() -> None:
    text = "再ランキングの役割は？"
    node = node_id_for(_derived(text))
    assert _is_safe(node)
    assert node == f"再ランキングの役割は？-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def test_node_id_is_a_fixed_function_of_the_text() -> None:
    text = "How are chunks deduplicated?"
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    assert node_id_for(_derived(text)) == f"How-are-chunks-deduplicated-{digest}"


def test_node_ids_stable_across_processes() -> None:
    script = (
        "from pytest_groove.evaluation.golden.file import node_id_for, derive_query_id\n"
        "from pytest_groove.scoring.records import GoldenQuery, ExpectedEntry\n"
        "t = '検索 and [brackets] :: colons'\n"
        "print(node_id_for(GoldenQuery(id=derive_query_id(t), query=t, "
        "expected=(ExpectedEntry('a'),))))\n"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        outputs.add(result.stdout.strip())
    (node,) = outputs
    assert _is_safe(node)


def test_node_ids_unique_even_for_identical_texts() -> None:
    queries = [_derived("same text"), _derived("same text"), _query("keep"), _query("keep")]
    ids = node_ids(queries)
    assert len(set(ids)) == 4
    assert ids[1] == ids[0] + "-2"
    assert ids[2:] == ["keep", "keep-2"]
    assert ids == node_ids(queries)


def test_node_ids_suffix_skips_taken_names() -> None:
    queries = [_query("a"), _query("a-2"), _query("a")]
    assert node_ids(queries) == ["a", "a-2", "a-3"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=50), st.booleans()), max_size=8))
def test_property_node_ids_safe_and_unique(items: list[tuple[str, bool]]) -> None:
    queries = [_query(text, text, True) if explicit else _derived(text) for text, explicit in items]
    ids = node_ids(queries)
    assert len(set(ids)) == len(ids)
    assert all(_is_safe(node) for node in ids)
    assert all("[" not in node and "]" not in node for node in ids)


# ------------------------------------------------------------------- garbage in, GrooveError out

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(["a.md", "docs/a.md", "../x", "/abs", "-x", "query", "expected", "path"]),
)
_KEYS = st.sampled_from(
    [
        "queries",
        "defaults",
        "query",
        "expected",
        "path",
        "heading",
        "id",
        "tags",
        "limit",
        "rerank",
        "relevance",
        "x",
    ]
)
_TREES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_KEYS, children, max_size=5)
    ),
    max_leaves=25,
)


def _check_outcome(target: Path, kb: Path) -> None:
    try:
        golden = load_golden(target, kb)
    except GrooveError as exc:
        assert "\n" not in exc.message
        assert exc.message.startswith(("failed to parse golden file: ", "refusing to read"))
    else:
        assert golden.queries
        for query in golden.queries:
            assert isinstance(query.query, str) and query.expected


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_TREES)
def test_property_any_yaml_structure_loads_or_fails_cleanly(tmp_path: Path, tree: object) -> None:
    target = tmp_path / "g.yml"
    target.write_text(
        yaml.safe_dump({"queries": tree}) if isinstance(tree, list) else yaml.safe_dump(tree)
    )
    _check_outcome(target, tmp_path)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
def test_property_garbage_bytes_fail_cleanly(tmp_path: Path, data: bytes) -> None:
    target = tmp_path / "g.yml"
    target.write_bytes(data)
    _check_outcome(target, tmp_path)


_YAML_ALPHABET = st.sampled_from(
    [*"queries:expected-path heading id tags[]{},&*!|>#'\"\n\t -?%@`\\", "  ", "\n  - "]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_YAML_ALPHABET, max_size=60).map("".join))
def test_property_yaml_like_text_fails_cleanly(tmp_path: Path, text: str) -> None:
    target = tmp_path / "g.yml"
    target.write_text(text)
    _check_outcome(target, tmp_path)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(min_value=0, max_value=len(FULL) - 1), st.sampled_from(list(" :-[]{}\n#x'\"&*")))
def test_property_mutated_valid_file_fails_cleanly(tmp_path: Path, at: int, char: str) -> None:
    target = tmp_path / "g.yml"
    target.write_text(FULL[:at] + char + FULL[at + 1 :])
    _check_outcome(target, tmp_path)
