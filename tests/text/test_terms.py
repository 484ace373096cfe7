"""The second full-text table (kb.terms) and its query compiler (version 4)."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.search.query.fts_query import (
    FTS_QUERY_VERSION,
    FTS_QUERY_VERSIONS,
    build_fts_query,
    build_terms_query,
    content_terms,
    parse_query,
)
from pytest_groove.text import scripts
from pytest_groove.text.scripts import JAPANESE_SHARE, SCRIPT_RANGES, japanese_script, script_group
from pytest_groove.text.terms import bigrams, script_runs, term_text


@pytest.mark.parametrize(
    ("run", "expected"),
    [("", []), ("牛", ["牛"]), ("牛乳", ["牛乳"]), ("修理料金", ["修理", "理料", "料金"])],
)
def test_bigrams(run: str, expected: list[str]) -> None:
    assert bigrams(run) == expected


def test_term_text_writes_japanese_runs_as_bigrams_and_keeps_other_text() -> None:
    assert term_text(None) is None
    assert term_text("牛乳を発注する") == " 牛乳  を  発注  する "
    assert term_text("sqlite-vec の設定") == "sqlite-vec  の  設定 "
    assert term_text("再ランキング") == " 再  ラン ンキ キン ング "


def _runs_char_by_char(text: str) -> list[tuple[str | None, str]]:
    """The plain definition of script runs, one character at a time."""
    runs: list[tuple[str | None, str]] = []
    for char in text:
        script = japanese_script(char)
        if runs and runs[-1][0] == script:
            runs[-1] = (script, runs[-1][1] + char)
        else:
            runs.append((script, char))
    return runs


def _term_text_char_by_char(text: str) -> str:
    return "".join(
        run if script is None else " " + " ".join(bigrams(run)) + " "
        for script, run in _runs_char_by_char(text)
    )


def test_script_ranges_and_japanese_script_agree_on_every_code_point() -> None:
    # every code point's script by the ranges, the first script listing it winning
    by_ranges: dict[int, str] = {}
    for script, ranges in SCRIPT_RANGES.items():
        for first, last in ranges:
            for code in range(first, last + 1):
                by_ranges.setdefault(code, script)

    assert all(japanese_script(chr(c)) == by_ranges.get(c) for c in range(0x110000))


#: text mixing ASCII, each Japanese script, the edges of their ranges and other scripts
_MIXED = st.text(
    alphabet=st.sampled_from(
        [
            *"ab -.\n\u00e9\u4e00\u9fff\u3400\uf900\u3005\u3006\u3041\u309f\u30a1\u30ff",
            *"\uff66\uff9f\U0002f800\U0002fa1f\u3040\u30a0\u3007\uac00",
            *"牛乳を発注するラン",
        ]
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_MIXED)
def test_run_pattern_cuts_text_as_the_character_definition_does(text: str) -> None:
    assert script_runs(text) == _runs_char_by_char(text)
    assert term_text(text) == _term_text_char_by_char(text)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # the example: function-word phrases under version 3, content words here
        ("牛乳はいつ発注すればいいですか", '"牛乳" OR "発注"'),
        (
            "how to stop the brakes from squealing",
            '"how" OR "stop" OR "brakes" OR "from" OR "squealing"',
        ),
        ('"Foundry Local" の設定', '"Foundry Local" OR "設定"'),
        ("修理料金", '"修理" OR "理料" OR "料金"'),
        ("血が止まらない", '"血" OR "止"'),
        ("はい", None),
        ("the", None),
        ("rust -async", '("rust") NOT ("async")'),
        ("設定 -再ランキング", '("設定") NOT ("再 ラン ンキ キン ング")'),
    ],
)
def test_terms_query_examples(query: str, expected: str | None) -> None:
    assert build_terms_query(query) == expected


def test_version_three_is_untouched_and_both_versions_name_their_table() -> None:
    assert FTS_QUERY_VERSION == 3
    assert build_fts_query("牛乳はいつ発注すればいいですか") == (
        '"牛乳はいつ" OR "はいつ" OR "発注すればいいですか" OR "すればいいですか"'
    )
    assert FTS_QUERY_VERSIONS == {3: "fts_chunks", 4: "fts_terms"}
    assert parse_query("abc", version=4).fts_table == "fts_terms"
    assert parse_query("abc").fts_table == "fts_chunks"
    with pytest.raises(GrooveError, match="fts_query_version 7"):
        parse_query("abc", version=7)


def test_terms_are_capped_and_deduplicated() -> None:
    words = " ".join(f"w{i:02d}" for i in range(40))
    assert len(content_terms(words + " w00")) == 32


def _table(rows: list[str]) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    for i, text in enumerate(rows, start=1):
        conn.execute("INSERT INTO t(rowid, content) VALUES (?, ?)", (i, term_text(text)))
    return conn


def _match(conn: apsw.Connection, query: str) -> list[int]:
    expr = build_terms_query(query)
    assert expr is not None
    return [
        int(r[0])
        for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank", (expr,))
    ]


def test_two_character_words_reach_the_table() -> None:
    conn = _table(["牛乳は毎週火曜日に発注します。", "コーヒー豆の焙煎について", "brakes squeal"])
    assert _match(conn, "牛乳はいつ発注すればいいですか") == [1]
    assert _match(conn, "squealing brake") == [3]  # English words are stemmed


def test_every_expression_is_accepted_by_fts5() -> None:
    conn = _table(["a"])
    for query in ['"" テスト', 'a"b', "NEAR(a b) * ^x", "emoji 🦀 query", "ｶﾀｶﾅ ＡＢＣ", "-x y"]:
        expr = build_terms_query(query)
        if expr is not None:
            conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expr,)).fetchone()


@pytest.mark.parametrize(
    ("text", "group"),
    [
        ("牛乳はいつ発注すればいいですか", "ja"),
        ("how to bleed a brake", "other"),
        ("RRF の k", "ja"),
        ("Set CONFIG_VALUE=3 in the 設定 file please", "other"),
        ("", "other"),
    ],
)
def test_script_group(text: str, group: str) -> None:
    assert script_group(text) == group


def _script_group_by_characters(text: str) -> str:
    """The definition written out one character at a time."""
    counted = [char for char in text if not char.isspace()]
    japanese = sum(japanese_script(char) is not None for char in counted)
    return "ja" if counted and japanese >= JAPANESE_SHARE * len(counted) else "other"


def test_script_group_counts_every_code_point_as_the_definition_does() -> None:
    every = "".join(chr(code) for code in range(0x110000))
    spaces = {match.start() for match in scripts._SPACE.finditer(every)}
    assert spaces == {code for code in range(0x110000) if chr(code).isspace()}
    japanese = {match.start() for match in scripts._JAPANESE.finditer(every)}
    assert japanese == {code for code in range(0x110000) if japanese_script(chr(code))}


@given(st.text(st.one_of(st.characters(), st.sampled_from(list(" \u3000\t牛乳はカタｶﾀ々ー")))))
def test_script_group_is_the_per_character_definition(text: str) -> None:
    assert script_group(text) == _script_group_by_characters(text)
