"""Query → FTS5 MATCH compiler (spec-search §4, §14, §16.1), without exclusions.

The expected expressions are the reference implementation's, byte for byte.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable, Iterator, Sequence

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.search.query import fts_query
from pytest_groove.search.query.exclusion import split_exclusions
from pytest_groove.search.query.fts_query import (
    FTS_QUERY_VERSION,
    MAX_PHRASES,
    _dedupe_and_cap,
    _emit_group,
    _groups,
    _runs,
    build_fts_query,
    parse_query,
    query_phrases,
)
from pytest_groove.search.query.spans import match_spans
from pytest_groove.text import querytext
from pytest_groove.text.plain import split_white_space, trim
from pytest_groove.text.querytext import (
    CharClass,
    Segment,
    char_class,
    is_word_char,
    split_quotes,
)
from tests.helpers.fts_tables import run_match, trigram_table

NUL = "\0"
FORTY_WORDS = " ".join(f"w{i:02d}" for i in range(40))

# §4.9, rows 1-47: (query, expected MATCH expression or None).
REFERENCE_EXAMPLES: list[tuple[str, str | None]] = [
    ("再ランキングの評価について", '"再ランキング" OR "ランキング" OR "の評価" OR "について"'),
    ("retry budget の設定", '"retry" OR "budget" OR "の設定"'),
    ('"Foundry Local" の設定', '"Foundry Local" OR "の設定"'),
    ('"再ランキングの評価について"', '"再ランキングの評価について"'),
    ("E0382", '"E0382"'),
    ("暗号化", '"暗号化"'),
    ("評価は", '"評価は"'),
    ("システム化", '"システム化" OR "システム"'),
    ('"ab" テスト', '"テスト"'),
    ("ab", None),
    ("", None),
    ("   ", None),
    ("エラー", '"エラー"'),
    ("の再ランキング", '"の再ランキング" OR "ランキング"'),
    ("の評価は", '"の評価は" OR "の評価"'),
    ("ＡＢＣ検索", '"ＡＢＣ検索" OR "ＡＢＣ"'),
    ("再ランキング化", '"再ランキング化" OR "再ランキング" OR "ランキング"'),
    ('"say ""hi"""', '"say ""hi"""'),
    ('"ab""cd"', '"ab""cd"'),
    ('abc "def', '"abc" OR "def"'),
    ('"" テスト', '"テスト"'),
    ('""""', '""""""""""'),
    (f'"a{NUL}bc"', None),
    ("abc abc def", '"abc" OR "def"'),
    ("ランキング 再ランキング", '"ランキング" OR "再ランキング"'),
    ("abcｶﾀｶﾅ", '"abc" OR "ｶﾀｶﾅ"'),
    ("あ亜ア", '"あ亜ア"'),
    ("サーバー", '"サーバー"'),
    ("代々木", '"代々木"'),
    ("한국어 Привет", '"한국어" OR "Привет"'),
    ("sqlite-vec", '"sqlite-vec"'),
    ("grooveseek", '"grooveseek"'),
    ("評価・分析", '"評価・分析" OR "評価・"'),
    ("クロス・エンコーダ", '"クロス・エンコーダ"'),
    ("再 ランキング", '"ランキング"'),
    ("sagashiro-embed-r4 の", '"sagashiro-embed-r4"'),
    ('再"ランキング"', '"ランキング"'),
    ('"ランキング"化', '"ランキング"'),
    ('foo "bar" AND', '"foo" OR "bar" OR "AND"'),
    ("foo OR bar", '"foo" OR "bar"'),
    ("heading:foo", '"heading" OR "foo"'),
    ("---", '"---"'),
    ("AI と ML", '"AI と ML"'),
    ("評価･分析", '"評価･分析"'),
    ("!!! ??? 、。", '"!!! ??? 、。"'),
    (" a ", None),
    (FORTY_WORDS, " OR ".join(f'"w{i:02d}"' for i in range(32))),
]

# §4.9 "additional cases", computed from the reference function.
ADDITIONAL_EXAMPLES: list[tuple[str, str | None]] = [
    ("AI について", '"について"'),
    ("ML pipelines", '"pipelines"'),
    ('"AI について"', '"AI について"'),
    ("AIについて", '"AIについて" OR "について"'),
    ("RRFのk", '"RRFのk" OR "RRF"'),
    ("k=60", '"k=60"'),
    ("3.14159", '"14159"'),
    ("tokio::spawn", '"tokio" OR "spawn"'),
    ("C++ と Rust", '"Rust"'),
    ("日本", None),
    ("ののの", '"ののの"'),
    ("漢字かなカナ漢字", '"漢字かな" OR "カナ漢字"'),
    ("東京〇丁目", '"東京〇丁目" OR "東京〇"'),
    ('ab"cd', '"ab""cd"'),
    ('"abc', '"abc"'),
    ("emoji 🦀 query", '"emoji" OR "query"'),
    ("NEAR(a b) * ^x", '"NEAR"'),
    ("How are chunks deduplicated?", '"How" OR "are" OR "chunks" OR "deduplicated"'),
    (
        "ハイブリッド検索の再ランキングをどう評価するか",
        '"ハイブリッド" OR "検索の" OR "再ランキング" OR "ランキング" OR "をどう" OR '
        '"評価するか" OR "するか"',
    ),
]

NFD_BATTERY = unicodedata.normalize("NFD", "バッテリ")

# §4.9 phrase-list examples (stages 1-5, no fallback).
PHRASE_EXAMPLES: list[tuple[str, list[str]]] = [
    ('"Foundry Local"', ["Foundry Local"]),
    ("retry budget", ["retry", "budget"]),
    ("ab", []),
    ("𠮷野家", ["𠮷野家"]),
    ("𠮷野家具店", ["𠮷野家具店", "野家具店"]),
    ("クロス・エンコーダ", ["クロス・エンコーダ"]),
    ("クロス･エンコーダ", ["クロス", "エンコーダ"]),
    ("---", ["---"]),
    ("___", ["___"]),
    ("--", []),
]


def _ids(cases: Sequence[tuple[str, object]]) -> list[str]:
    return [ascii(query)[:40] for query, _ in cases]


@pytest.mark.parametrize(("query", "expected"), REFERENCE_EXAMPLES, ids=_ids(REFERENCE_EXAMPLES))
def test_reference_examples(query: str, expected: str | None) -> None:
    assert build_fts_query(query) == expected


@pytest.mark.parametrize(("query", "expected"), ADDITIONAL_EXAMPLES, ids=_ids(ADDITIONAL_EXAMPLES))
def test_additional_examples(query: str, expected: str | None) -> None:
    assert build_fts_query(query) == expected


@pytest.mark.parametrize(("query", "expected"), PHRASE_EXAMPLES, ids=_ids(PHRASE_EXAMPLES))
def test_phrase_list_examples(query: str, expected: list[str]) -> None:
    assert query_phrases(query) == expected


def test_version_is_three() -> None:
    assert FTS_QUERY_VERSION == 3


def test_parse_query_without_exclusion_keeps_the_text() -> None:
    parsed = parse_query("  retry budget の設定 ")
    assert parsed.positive == "  retry budget の設定 "
    assert parsed.exclusions == ()
    assert parsed.fts == '"retry" OR "budget" OR "の設定"'


def test_parsed_query_is_frozen() -> None:
    parsed = parse_query("retry")
    with pytest.raises(AttributeError):
        parsed.fts = None  # type: ignore[misc]


# --- character classes (§4.1, §16.1) -------------------------------------------------


@pytest.mark.parametrize(
    ("chars", "klass"),
    [
        ("再々〆", CharClass.KANJI),
        ("ぁ\u3099", CharClass.HIRAGANA),
        ("アーｱ・ﾞﾟ", CharClass.KATAKANA),
        ("A0Ａ０п한_-𠮷〇¹Ⓐ\u093f\u0e39", CharClass.WORD),
        (' \u3000:"。\0･🦀\u094d\u0301.、(*^=%+', CharClass.SEPARATOR),
    ],
)
def test_char_class(chars: str, klass: CharClass) -> None:
    assert [char_class(c) for c in chars] == [klass] * len(chars)


def test_other_alphabetic_marks_are_word_chars_but_isalnum_misses_them() -> None:
    # Devanagari vowel signs are Alphabetic through Other_Alphabetic, not letters.
    assert not "\u093f".isalnum()
    assert char_class("\u093f") is CharClass.WORD
    assert query_phrases("कि ता") == []  # two 2-char groups: consonant + vowel sign
    assert query_phrases("किताब") == ["किताब"]
    # The virama is a mark but not Alphabetic: it separates.
    assert query_phrases("क्ताब") == ["ताब"]


def _regex_mismatches(codes: Iterable[int]) -> list[str]:
    regex = pytest.importorskip("regex")
    word = regex.compile(r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}_\-]")
    return [
        hex(code)
        for code in codes
        if not 0xD800 <= code <= 0xDFFF and is_word_char(chr(code)) != bool(word.match(chr(code)))
    ]


def test_word_table_matches_regex_module_at_its_ranges() -> None:
    """The table in querytext is Unicode 17.0; regex (if installed) is the oracle."""
    codes = {
        code
        for start, end in zip(querytext._OA_STARTS, querytext._OA_ENDS, strict=True)
        for code in range(start - 1, end + 2)
    }
    assert _regex_mismatches(sorted(codes)) == []


@pytest.mark.slow
def test_word_class_matches_regex_module_everywhere() -> None:
    mismatches = _regex_mismatches(range(0x110000))
    assert mismatches == [], "regex has another Unicode version: regenerate the word table"


def test_word_table_is_sorted_and_disjoint() -> None:
    ends = [-1, *querytext._OA_ENDS]
    for start, end, previous_end in zip(
        querytext._OA_STARTS, querytext._OA_ENDS, ends, strict=False
    ):
        assert previous_end < start <= end


def test_trim_uses_unicode_white_space_not_str_strip() -> None:
    assert trim("\u3000\t abc \u2003\n") == "abc"
    # U+001F is whitespace to str.strip but not Unicode White_Space.
    assert trim("\x1fabc\x1f") == "\x1fabc\x1f"
    assert "\x1fabc\x1f".strip() == "abc"
    assert split_white_space(" a\u3000b\x1fc  ") == ["a", "b\x1fc"]


def test_fallback_trim_keeps_non_white_space_control_chars() -> None:
    # U+001F is a separator (no phrase), but not trimmed: the fallback keeps it.
    assert build_fts_query("\x1fab") == '"\x1fab"'
    assert build_fts_query("\u3000ab\u3000") is None


@pytest.mark.parametrize(
    "query",
    [f'"abc{NUL}"', '"abc\udcff"', f"{NUL}ab", "\udcffab", f"x{NUL}y", "ab\ud800"],
)
def test_unsendable_characters_never_reach_fts(query: str) -> None:
    # NUL and lone surrogates (undecodable argv bytes) are separators in plain text,
    # drop a quoted phrase and veto the verbatim fallback.
    assert build_fts_query(query) is None


def test_lone_surrogate_in_plain_text_is_a_separator() -> None:
    assert build_fts_query("abc\udcffdef") == '"abc" OR "def"'


# --- stage 1: quote segmentation ------------------------------------------------------


def test_split_quotes_quoted_then_plain() -> None:
    assert split_quotes('"Foundry Local" の設定') == [
        Segment("quoted", 0, 15, "Foundry Local"),
        Segment("plain", 15, 19, " の設定"),
    ]


def test_split_quotes_collapses_doubled_quotes() -> None:
    assert split_quotes('"say ""hi"""') == [Segment("quoted", 0, 12, 'say "hi"')]


def test_split_quotes_unterminated_is_one_plain_segment() -> None:
    text = 'abc "de"" fg'
    assert split_quotes(text) == [Segment("plain", 0, len(text), text)]


def test_split_quotes_keeps_plain_before_an_unterminated_quote_after_a_closed_one() -> None:
    assert split_quotes('"abc" x "y') == [
        Segment("quoted", 0, 5, "abc"),
        Segment("plain", 5, 10, ' x "y'),
    ]


# --- stages 2-4 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("再 ランキング", ["再", "ランキング"]),
        ("評価･分析", ["評価", "分析"]),
        ("a  b", ["a", "b"]),
        (" a ", ["a"]),
        ("!!!", []),
    ],
)
def test_groups_never_span_separators(text: str, groups: list[str]) -> None:
    assert _groups(text) == groups


@pytest.mark.parametrize(
    ("group", "runs"),
    [
        ("再ランキングの評価について", ["再", "ランキング", "の", "評価", "について"]),
        ("sqlite-vec", ["sqlite-vec"]),
        ("クロス・エンコーダ", ["クロス・エンコーダ"]),
        ("𠮷野家", ["𠮷", "野家"]),
        ("東京〇丁目", ["東京", "〇", "丁目"]),
    ],
)
def test_runs(group: str, runs: list[str]) -> None:
    assert _runs(group) == runs


@pytest.mark.parametrize(
    ("runs", "phrases"),
    [
        (
            ["再", "ランキング", "の", "評価", "について"],
            ["再ランキング", "ランキング", "の評価", "について"],
        ),
        (["システム", "化"], ["システム化", "システム"]),
        (["の", "再", "ランキング"], ["の再ランキング", "ランキング"]),
        (["評価"], []),
        ([], []),
        (["再", "ランキング", "化"], ["再ランキング化", "再ランキング", "ランキング"]),
    ],
)
def test_emit_group(runs: list[str], phrases: list[str]) -> None:
    assert _emit_group(runs) == phrases


def test_nfc_and_nfd_spellings_give_different_phrases() -> None:
    assert char_class("\u3099") is CharClass.HIRAGANA
    assert query_phrases("バッテリ") == ["バッテリ"]
    assert query_phrases(NFD_BATTERY) != query_phrases("バッテリ")


def test_quote_boundary_stops_absorption() -> None:
    # The quoted "ab" is dropped (too short) and its neighbours never join through it.
    assert query_phrases('再"ab"化') == []


# --- stage 5: dedupe then cap ---------------------------------------------------------


def test_dedupe_happens_before_the_cap() -> None:
    others = [f"x{i:02d}" for i in range(31)]
    kept, dropped = _dedupe_and_cap(["dup", "dup", *others])
    assert kept == ["dup", *others]
    assert len(kept) == 32
    assert dropped == 0


@pytest.mark.parametrize(("distinct", "dropped"), [(37, 5), (32, 0), (33, 1)])
def test_cap_counts_dropped_distinct_phrases(distinct: int, dropped: int) -> None:
    kept, count = _dedupe_and_cap([f"p{i:03d}" for i in range(distinct)])
    assert kept == [f"p{i:03d}" for i in range(min(distinct, MAX_PHRASES))]
    assert count == dropped


def test_cap_keeps_first_occurrences() -> None:
    assert _dedupe_and_cap(["a", "a", "b"]) == (["a", "b"], 0)


def test_truncation_warns_once_per_compile_and_never_for_spans(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=fts_query.__name__)
    for _ in range(5):
        query_phrases(FORTY_WORDS)
        match_spans(FORTY_WORDS, "w00 w01")
    assert caplog.records == []
    build_fts_query(FORTY_WORDS)
    assert len(caplog.records) == 1
    assert "8 more distinct phrases" in caplog.records[0].getMessage()


def test_no_warning_at_exactly_the_cap(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=fts_query.__name__)
    build_fts_query(" ".join(f"w{i:02d}" for i in range(32)))
    assert caplog.records == []


@pytest.mark.parametrize(
    "query",
    [
        "ハイブリッド検索の再ランキングをどう評価するか",
        "How are chunks deduplicated?",
        "sqlite-vec の再ランキングと RRF の k パラメータを調整する方法",
        "retry budget の設定と exponential backoff の上限",
    ],
)
def test_realistic_queries_leave_headroom_under_the_cap(query: str) -> None:
    assert 1 <= len(query_phrases(query)) <= MAX_PHRASES // 2


# --- properties -----------------------------------------------------------------------

QUERY_ALPHABET = st.one_of(
    st.characters(),
    st.sampled_from(list('""--- _・･\0\x1f\u3000🦀再ランキングの評価abcＡＢＣ한〇𠮷\u093f')),
)
QUERY_TEXT = st.text(QUERY_ALPHABET, max_size=60)


@given(QUERY_TEXT)
def test_property_phrases_are_substrings_and_capped(text: str) -> None:
    phrases = query_phrases(text)
    assert len(phrases) <= MAX_PHRASES
    assert len(set(phrases)) == len(phrases)
    quote_free = text.replace('"', "")
    for phrase in phrases:
        assert len(phrase) >= 3
        assert phrase.replace('"', "") in quote_free
        if '"' not in text:
            assert phrase in text


@given(st.text(st.characters(exclude_characters='"'), max_size=60))
def test_property_plain_text_phrases_are_substrings(text: str) -> None:
    for phrase in query_phrases(text):
        assert phrase in text


@given(st.text(st.characters(exclude_characters="-"), max_size=60))
def test_property_without_dash_there_is_nothing_to_exclude(text: str) -> None:
    parsed = parse_query(text, require_positive=False)
    assert parsed.positive == text
    assert parsed.exclusions == ()
    phrases = query_phrases(text)
    if parsed.fts is None:
        assert phrases == []
    elif phrases:
        assert parsed.fts == " OR ".join('"' + p.replace('"', '""') + '"' for p in phrases)
    else:
        assert parsed.fts == '"' + trim(text).replace('"', '""') + '"'


# --- FTS5 accepts everything we emit ---------------------------------------------------

ROWS: list[tuple[str, str, str]] = [
    ("Overview", "guide > Overview", "alpha beta gamma"),
    ("再ランキング", "評価 > 再ランキング", "再ランキングは検索結果の順位を付け直す処理です。"),
    ("Retry", "ops > Retry", "the retry budget の設定 controls backoff"),
    ("Zebra", "bio", "zebrafish are small fish"),
    ("Prose", "writing", "good prose is clear"),
    ("Rust", "lang > Rust", "rust async runtimes such as tokio::spawn"),
    ("Rust sync", "lang > Rust", "rust without async: plain threads"),
]


@pytest.fixture(scope="module")
def fts_db() -> Iterator[apsw.Connection]:
    yield from trigram_table(dict(enumerate(ROWS, start=1)))


@pytest.mark.parametrize(
    ("query", "expected"),
    REFERENCE_EXAMPLES + ADDITIONAL_EXAMPLES,
    ids=_ids(REFERENCE_EXAMPLES + ADDITIONAL_EXAMPLES),
)
def test_fts5_accepts_every_example(
    fts_db: apsw.Connection, query: str, expected: str | None
) -> None:
    expression = build_fts_query(query)
    assert expression == expected
    if expression is not None:
        run_match(fts_db, expression)


def test_trigram_facts_the_compiler_relies_on(fts_db: apsw.Connection) -> None:
    for phrase in ('"alp"', '"alph"', '"alpha"', '"eta gam"', '"ALPHA"'):
        assert run_match(fts_db, phrase) == {1}
    for phrase in ('"a"', '"al"', '"ph"'):
        assert run_match(fts_db, phrase) == set()


def test_japanese_sentence_reaches_fts_but_the_quoted_sentence_does_not(
    fts_db: apsw.Connection,
) -> None:
    expression = build_fts_query("再ランキングの評価について")
    assert expression is not None
    assert run_match(fts_db, expression) == {2}
    quoted = build_fts_query('"再ランキングの評価について"')
    assert quoted is not None
    assert run_match(fts_db, quoted) == set()


def test_words_are_or_ed_not_and_ed(fts_db: apsw.Connection) -> None:
    expression = build_fts_query("zebrafish prose")
    assert expression == '"zebrafish" OR "prose"'
    assert run_match(fts_db, expression) == {4, 5}


def test_user_typed_operators_are_literal(fts_db: apsw.Connection) -> None:
    fixed = (
        "NEAR(a b) * ^x",
        "foo OR bar",
        "heading:retry",
        'col:"x" AND NOT y*',
        "A0¹\0Aa¹",
        '"a" "b" "" """',
        "(((",
        "rust- - --",
        "{heading content}: rust",
        "^rust + tokio",
    )
    for query in fixed:
        expression = build_fts_query(query)
        assert expression is not None
        run_match(fts_db, expression)
    assert run_match(fts_db, '"heading" OR "retry"') == {3}


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERY_TEXT)
def test_property_fts5_never_rejects_a_compiled_query(fts_db: apsw.Connection, text: str) -> None:
    try:
        expression = build_fts_query(text)
    except GrooveError:
        split = split_exclusions(text)
        assert split.exclusions
        # quotes, blanks and NUL (dropped before searching) leave nothing to search for
        assert not trim(split.positive.replace('"', "").replace("\x00", " "))
        return
    if expression is not None:
        run_match(fts_db, expression)


@pytest.mark.parametrize("text", ["\x00", "\x00\x00 ", ' "\x00" '])
def test_a_query_of_nuls_quotes_and_blanks_is_refused_as_the_golden_file_refuses_it(
    text: str,
) -> None:
    # NUL is dropped before searching: such a query would answer with arbitrary hits
    with pytest.raises(GrooveError, match="is empty: give at least one term"):
        fts_query.parse_query(text)
