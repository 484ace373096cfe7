"""``-term`` exclusion: syntax, the FTS5 ``NOT`` clause and the post-filter."""

from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.search.query import fts_query
from pytest_groove.search.query.exclusion import is_excluded, split_exclusions
from pytest_groove.search.query.fts_query import (
    MAX_PHRASES,
    build_fts_query,
    parse_query,
    query_phrases,
)
from pytest_groove.text.plain import split_white_space, trim
from tests.helpers.fts_tables import run_match, trigram_table

# (query, positive part, exclusions, MATCH expression)
SYNTAX_CASES: list[tuple[str, str, tuple[str, ...], str | None]] = [
    ("rust -async", "rust", ("async",), '("rust") NOT ("async")'),
    ("-async rust", "rust", ("async",), '("rust") NOT ("async")'),
    ("rust -async tokio", "rust tokio", ("async",), '("rust" OR "tokio") NOT ("async")'),
    ("rust -async -tokio", "rust", ("async", "tokio"), '("rust") NOT ("async" OR "tokio")'),
    ('rust -"two words"', "rust", ("two words",), '("rust") NOT ("two words")'),
    ('rust -"say ""hi"""', "rust", ('say "hi"',), '("rust") NOT ("say ""hi""")'),
    ('"Foundry Local" -docker', '"Foundry Local"', ("docker",), '("Foundry Local") NOT ("docker")'),
    ("rust -tokio::spawn", "rust", ("tokio::spawn",), '("rust") NOT ("tokio::spawn")'),
    ("rust -foo-bar", "rust", ("foo-bar",), '("rust") NOT ("foo-bar")'),
    ("rust -_private", "rust", ("_private",), '("rust") NOT ("_private")'),
    ("rust -2024", "rust", ("2024",), '("rust") NOT ("2024")'),
    ("rust\u3000-async", "rust", ("async",), '("rust") NOT ("async")'),
    ("rust\t-async\n", "rust", ("async",), '("rust") NOT ("async")'),
    (
        "再ランキング -評価の方法",
        "再ランキング",
        ("評価の方法",),
        '("再ランキング" OR "ランキング") NOT ("評価の方法")',
    ),
    # Excluded terms under three characters stay out of FTS (they would match nothing);
    # the expression is then exactly the positive part's.
    ("rust -ab", "rust", ("ab",), '"rust"'),
    ("再ランキング -評価", "再ランキング", ("評価",), '"再ランキング" OR "ランキング"'),
    # The positive part is compiled on its own, including the verbatim fallback.
    ("AI -foo と ML", "AI と ML", ("foo",), '("AI と ML") NOT ("foo")'),
    ("k=60 -foo", "k=60", ("foo",), '("k=60") NOT ("foo")'),
    ("ab -rust", "ab", ("rust",), None),
    ('"x" -"y -z" -w', '"x"', ("y -z", "w"), '("""x""") NOT ("y -z")'),  # like §4.9 #22
    # Repeats collapse; case variants are kept (the post-filter folds case anyway).
    ("rust -async -async -Async", "rust", ("async", "Async"), '("rust") NOT ("async" OR "Async")'),
    # A stray unclosed quote after "-" still means exclusion of the token.
    ('rust -"abc', "rust", ("abc",), '("rust") NOT ("abc")'),
    ('x -"abc def', "x def", ("abc",), '("def") NOT ("abc")'),
    # A quoted exclusion ends at its closing quote; a word runs to a quoted phrase.
    ('rust -"a b"cde', "rust cde", ("a b",), '("rust" OR "cde") NOT ("a b")'),
    ('-foo"bar baz"', '"bar baz"', ("foo",), '("bar baz") NOT ("foo")'),
    # Not exclusions: "-" inside a token, alone, doubled, inside quotes, before a
    # separator, or followed by an empty/blank quote.
    ("sqlite-vec", "sqlite-vec", (), '"sqlite-vec"'),
    ("k=-1", "k=-1", (), '"k=-1"'),
    ("foo-", "foo-", (), '"foo-"'),
    ("---", "---", (), '"---"'),
    ("--", "--", (), None),
    ("rust - async", "rust - async", (), '"rust" OR "async"'),
    ("rust --async", "rust --async", (), '"rust" OR "--async"'),
    ("rust --verbose", "rust --verbose", (), '"rust" OR "--verbose"'),
    ('"rust -async"', '"rust -async"', (), '"rust -async"'),
    ('"abc"-def', '"abc"-def', (), '"abc" OR "-def"'),
    ("rust -!!!", "rust -!!!", (), '"rust"'),
    ("rust -:foo", "rust -:foo", (), '"rust" OR "foo"'),
    ('rust -""', 'rust -""', (), '"rust"'),
    ('rust -"   "', 'rust -"   "', (), '"rust" OR "   "'),
    ('rust -"', 'rust -"', (), '"rust"'),
]


def _ids(cases: list[tuple[str, str, tuple[str, ...], str | None]]) -> list[str]:
    return [ascii(case[0])[:40] for case in cases]


@pytest.mark.parametrize(
    ("query", "positive", "exclusions", "fts"), SYNTAX_CASES, ids=_ids(SYNTAX_CASES)
)
def test_exclusion_syntax(
    query: str, positive: str, exclusions: tuple[str, ...], fts: str | None
) -> None:
    parsed = parse_query(query)
    assert parsed.positive == positive
    assert parsed.exclusions == exclusions
    assert parsed.fts == fts
    assert build_fts_query(query) == fts


def test_non_exclusion_queries_compile_exactly_like_the_positive_text() -> None:
    for query, positive, exclusions, fts in SYNTAX_CASES:
        if not exclusions:
            assert positive == query
            assert fts == parse_query(query).fts


def test_exclusion_clause_is_capped() -> None:
    terms = [f"term{i:02d}" for i in range(40)]
    parsed = parse_query("rust " + " ".join(f"-{t}" for t in terms))
    assert parsed.exclusions == tuple(terms)
    assert parsed.fts is not None
    negative = parsed.fts.split(" NOT ", 1)[1]
    assert negative.count(" OR ") == MAX_PHRASES - 1
    assert '"term31"' in negative
    assert '"term32"' not in negative


def test_excluded_term_with_nul_is_not_sent_to_fts() -> None:
    parsed = parse_query("rust -ab\0cd")
    assert parsed.exclusions == ("ab\0cd",)
    assert parsed.fts == '"rust"'


@pytest.mark.parametrize(
    "query",
    ["-async", "  -async  ", "-a -b", '-"two words"', '"" -foo', '-foo ""', "-x\n-y"],
)
def test_query_with_nothing_positive_is_refused(query: str) -> None:
    with pytest.raises(GrooveError) as caught:
        parse_query(query)
    message = caught.value.message
    assert "\n" not in message
    assert repr(query) in message
    assert "add at least one positive term" in message
    with pytest.raises(GrooveError):
        build_fts_query(query)


@pytest.mark.parametrize("query", ["", "   ", "-", "--", '""'])
def test_empty_queries_without_exclusions_compile_to_no_fts(query: str) -> None:
    parsed = parse_query(query, require_positive=False)
    assert parsed.exclusions == ()
    assert parsed.fts is None


@pytest.mark.parametrize("query", ["", "   ", '""', '" "'])
def test_a_search_needs_something_to_search_for(query: str) -> None:
    with pytest.raises(GrooveError, match="is empty"):
        parse_query(query)


@pytest.mark.parametrize("query", ["-", "--"])
def test_dash_only_queries_are_literal_text(query: str) -> None:
    parsed = parse_query(query)
    assert parsed.exclusions == () and parsed.positive == query


def test_query_phrases_takes_text_literally() -> None:
    # Spans and the vector leg go through the positive part; query_phrases is stage 1-5.
    assert query_phrases("rust -async") == ["rust", "-async"]
    assert query_phrases(parse_query("rust -async").positive) == ["rust"]


# --- is_excluded ----------------------------------------------------------------------


def test_is_excluded_is_a_case_insensitive_substring_test() -> None:
    assert is_excluded(("async",), "Heading", None, "ASYNC runtimes")
    assert is_excluded(("Async",), None, None, "asynchronous code")
    assert is_excluded(("two words",), "Two Words here", None, "")
    assert is_excluded(("async",), None, "lang > Async", None)
    assert not is_excluded(("async",), "Rust", "lang > Rust", "threads only")
    assert not is_excluded(("two words",), None, None, "two  words")


def test_is_excluded_uses_full_case_folding() -> None:
    assert is_excluded(("straße",), None, None, "STRASSE")
    assert is_excluded(("ΣΊΣΥΦΟΣ",), None, None, "σίσυφος")


def test_is_excluded_without_terms_or_fields() -> None:
    assert not is_excluded((), "anything", "at", "all")
    assert not is_excluded(("async",))
    assert not is_excluded(("async",), None, "", None)
    assert not is_excluded(("",), "an empty term never excludes", None, None)


def test_is_excluded_is_reexported_from_fts_query() -> None:
    assert fts_query.is_excluded is is_excluded


def test_short_terms_still_exclude_through_the_post_filter() -> None:
    parsed = parse_query("再ランキング -評価")
    assert is_excluded(parsed.exclusions, None, None, "再ランキングの評価")
    assert not is_excluded(parsed.exclusions, None, None, "再ランキングの方法")


# --- FTS5 really drops the excluded rows ------------------------------------------------

ROWS: dict[int, tuple[str, str, str]] = {
    1: ("Rust async", "lang > Rust", "rust async runtimes such as tokio"),
    2: ("Rust threads", "lang > Rust", "rust with plain threads"),
    3: ("Tokio", "lang > Rust > Async", "tokio::spawn schedules a rust task"),
    4: ("Zebra", "bio", "zebrafish are small fish"),
    5: ("Prose", "writing", "good prose is clear"),
    6: ("Zebra prose", "bio > writing", "zebrafish prose with two words"),
    7: ("再ランキング", "評価 > 再ランキング", "再ランキングは検索結果の順位を付け直す処理です。"),
    8: ("再ランキングの評価", "評価", "再ランキングの評価方法について説明します。"),
    9: ("Café", "food", "café culture and rust"),
}


@pytest.fixture(scope="module")
def fts_db() -> Iterator[apsw.Connection]:
    yield from trigram_table(ROWS)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("rust", {1, 2, 3, 9}),
        ("rust -async", {2, 9}),
        ("rust -ASYNC", {2, 9}),
        ("rust -async -café", {2}),
        ("rust -tokio::spawn", {1, 2, 9}),
        ('rust -"plain threads"', {1, 3, 9}),
        ("zebrafish prose", {4, 5, 6}),
        ("zebrafish prose -bio", {5}),
        ('zebrafish prose -"two words"', {4, 5}),
        ("再ランキング", {7, 8}),
        ("再ランキング -評価方法", {7}),
        ("再ランキング -順位を", {8}),
    ],
)
def test_excluded_rows_disappear_from_fts(
    fts_db: apsw.Connection, query: str, expected: set[int]
) -> None:
    expression = build_fts_query(query)
    assert expression is not None
    assert run_match(fts_db, expression) == expected


def test_fts_not_agrees_with_the_post_filter(fts_db: apsw.Connection) -> None:
    """For plain ASCII terms the FTS clause and is_excluded drop the same rows."""
    for query in ("rust -async", "zebrafish prose -bio", "rust -TOKIO -threads", "fish -zebra"):
        parsed = parse_query(query)
        assert parsed.fts is not None
        positive_expression = build_fts_query(parsed.positive)
        assert positive_expression is not None
        kept = {
            row_id
            for row_id in run_match(fts_db, positive_expression)
            if not is_excluded(parsed.exclusions, *ROWS[row_id])
        }
        assert run_match(fts_db, parsed.fts) == kept


def test_short_exclusion_would_not_work_in_fts(fts_db: apsw.Connection) -> None:
    # Why terms under three characters stay out of the NOT clause: they match nothing,
    # so "NOT" would silently exclude nothing.
    assert run_match(fts_db, '"rust" NOT "as"') == run_match(fts_db, '"rust"')


# --- properties ---------------------------------------------------------------------------

WORD = st.text(st.sampled_from("abcxyz_09再評価ランキングの"), min_size=1, max_size=8)
PHRASE = st.text(st.sampled_from("abc xyz-再評価"), min_size=1, max_size=10).filter(
    lambda text: trim(text) != ""
)


@st.composite
def queries_with_exclusions(draw: st.DrawFn) -> tuple[str, list[str], list[str]]:
    """A query of positive words and ``-word`` / ``-"phrase"`` exclusions, shuffled.

    Returns the query, its positive words and its excluded terms, in query order.
    """
    positives = draw(st.lists(WORD, min_size=1, max_size=5))
    words_out = draw(st.lists(WORD, max_size=3))
    phrases_out = draw(st.lists(PHRASE, max_size=3))
    tokens: list[tuple[str, str]] = [(word, word) for word in positives]
    for word in words_out:
        tokens.append((draw(st.sampled_from([f"-{word}", f'-"{word}"'])), word))
    tokens.extend(('-"' + phrase + '"', phrase) for phrase in phrases_out)
    shuffled = draw(st.permutations(tokens))
    separator = draw(st.sampled_from([" ", "  ", "\u3000", "\t"]))
    query = separator.join(text for text, _ in shuffled)
    positive_words = [term for text, term in shuffled if not text.startswith("-")]
    excluded = [term for text, term in shuffled if text.startswith("-")]
    return query, positive_words, excluded


@given(queries_with_exclusions())
def test_property_exclusions_are_recovered(case: tuple[str, list[str], list[str]]) -> None:
    query, positives, excluded = case
    parsed = parse_query(query)
    assert parsed.exclusions == tuple(dict.fromkeys(excluded))
    assert split_white_space(parsed.positive) == positives


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(queries_with_exclusions())
def test_property_fts5_accepts_queries_with_exclusions(
    fts_db: apsw.Connection, case: tuple[str, list[str], list[str]]
) -> None:
    query, _, _ = case
    parsed = parse_query(query)
    if parsed.fts is None:
        return
    matched = run_match(fts_db, parsed.fts)
    for row_id in matched:
        # Every row FTS keeps survives the post-filter too, unless a term is too short
        # to have reached FTS.
        if all(len(term) >= 3 for term in parsed.exclusions):
            assert not is_excluded(parsed.exclusions, *ROWS[row_id])


ANY_TEXT = st.text(
    st.one_of(st.characters(), st.sampled_from(list('"- \0\u3000🦀再ランキabc'))), max_size=60
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ANY_TEXT)
def test_property_arbitrary_text_never_breaks_fts5(fts_db: apsw.Connection, text: str) -> None:
    split = split_exclusions(text)
    try:
        parsed = parse_query(text)
    except GrooveError:
        # quotes, blanks and NUL (dropped before searching) leave nothing to search for
        assert not trim(split.positive.replace('"', "").replace("\x00", " "))
        return
    assert parsed.positive == split.positive
    assert parsed.exclusions == split.exclusions
    assert all(trim(term) for term in parsed.exclusions)
    if not parsed.exclusions:
        assert parsed.positive == text
    if parsed.fts is not None:
        run_match(fts_db, parsed.fts)


@pytest.mark.parametrize(
    "text",
    [
        "The café menu",
        "NAÏVE approach",
        "バスに乗る",
        "パスワード",
        "ＡＢＣ full width",
        "ｶﾀｶﾅ half width",
        "Ærø island",
        "plain ascii text",
    ],
)
@pytest.mark.parametrize(
    "term", ["cafe", "naive", "パスワ", "バスに", "abc", "カタカナ", "aero", "ascii"]
)
def test_post_filter_agrees_with_the_fts_tokenizer(term: str, text: str) -> None:
    # For terms the trigram index can match (3+ characters), the post-filter drops
    # exactly what the index's NOT drops: case and Latin diacritics folded, voiced
    # kana and full-width forms kept distinct.
    connection = apsw.Connection(":memory:")
    connection.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, "
        "tokenize='trigram remove_diacritics 1 case_sensitive 0')"
    )
    connection.execute("INSERT INTO t(rowid, content) VALUES (1, ?)", (text,))
    quoted = '"' + term.replace('"', '""') + '"'
    fts_hit = bool(list(connection.execute("SELECT rowid FROM t WHERE t MATCH ?", (quoted,))))
    assert is_excluded((term,), text) == fts_hit
