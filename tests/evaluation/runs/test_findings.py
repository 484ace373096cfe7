"""The golden-queries-quoted check."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.evaluation.runs.findings import (
    MIN_QUERY_CODE_POINTS,
    findings_warning,
    normalise_text,
    scan_golden_quotes,
)
from pytest_groove.evaluation.runs.record import Finding, QueryResult, QuotedQuery
from pytest_groove.kb.source.records import ChunkText
from pytest_groove.scoring.records import ExpectedEntry
from tests.helpers.eval_factories import query

LONG_A = "how does reciprocal rank fusion work"
LONG_B = "what is the retention period for backups"
LONG_C = "which port does the staging server use"


def q(
    qid: str, text: str, expected: Sequence[str] = ("answer.md",), top: Sequence[str] = ()
) -> QueryResult:
    return query(qid, text=text, expected=expected, top=top)


def chunk(
    path: str,
    content: str = "",
    heading: str | None = None,
    context: str | None = None,
    index: int = 0,
) -> ChunkText:
    return ChunkText(
        path=path, chunk_index=index, heading=heading, context=context, content=content
    )


# --------------------------------------------------------------------------- normalisation


def test_normalisation_collapses_unicode_whitespace_trims_and_lowercases() -> None:
    assert normalise_text("  How\n\tDoes\u3000RRF   Work?\u00a0") == "how does rrf work?"


def test_information_separators_are_not_whitespace() -> None:
    # str.split() would split on U+001F; the Unicode White_Space property does not
    assert normalise_text("a\x1fb  c") == "a\x1fb c"


@given(st.text())
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalise_text(text)
    assert normalise_text(once) == once
    assert "  " not in once and once == once.strip(" ")


# --------------------------------------------------------------------------- needles


def test_short_queries_are_not_looked_for_counting_code_points() -> None:
    short_ja = "ログの保存期間"  # 7 code points, 21 bytes
    assert len(short_ja) < MIN_QUERY_CODE_POINTS < len(short_ja.encode())
    long_ja = "本番データベースのバックアップ保存期間"  # 19 code points
    results = [
        q("mcp", "MCP とは"),
        q("ja-short", short_ja),
        q("ja-long", long_ja),
        q("en", LONG_A),
    ]
    corpus = [chunk("note.md", f"MCP とは / {short_ja} / {long_ja} / {LONG_A}")]
    (found,) = scan_golden_quotes(results, corpus)
    assert [x.query_id for x in found.quoted] == ["ja-long", "en"]


def test_queries_differing_in_case_and_whitespace_fold_into_one() -> None:
    results = [q("first", LONG_A), q("second", "  HOW does\nreciprocal rank FUSION work ")]
    assert scan_golden_quotes(results, [chunk("note.md", LONG_A)]) == []


def test_folded_query_reports_the_first_id_once() -> None:
    results = [q("first", LONG_A), q("second", LONG_A.upper()), q("other", LONG_B)]
    (found,) = scan_golden_quotes(results, [chunk("note.md", f"{LONG_A}. {LONG_B}")])
    assert [x.query_id for x in found.quoted] == ["first", "other"]


# --------------------------------------------------------------------------- rule


def test_a_quote_contained_in_a_longer_quote_counts_once() -> None:
    short = "reciprocal rank fusion"
    results = [q("short", short), q("long", LONG_A)]
    corpus = [chunk("note.md", f"Q: {LONG_A}?")]
    assert scan_golden_quotes(results, corpus) == []
    results.append(q("other", LONG_B))
    corpus.append(chunk("note.md", LONG_B, index=1))
    (found,) = scan_golden_quotes(results, corpus)
    assert [x.query_id for x in found.quoted] == ["long", "other"]


def test_one_quoted_query_is_not_a_finding_two_are() -> None:
    results = [q("a", LONG_A), q("b", LONG_B), q("c", LONG_C)]
    assert scan_golden_quotes(results, [chunk("one.md", LONG_A)]) == []
    found = scan_golden_quotes(results, [chunk("two.md", f"{LONG_C} and {LONG_A}")])
    assert found == [
        Finding(
            "golden-queries-quoted",
            "two.md",
            (QuotedQuery("a", None), QuotedQuery("c", None)),
        )
    ]


def test_quotes_across_chunks_of_one_document_add_up() -> None:
    results = [q("a", LONG_A), q("b", LONG_B)]
    corpus = [chunk("n.md", LONG_A, index=0), chunk("n.md", LONG_B, index=1)]
    assert len(scan_golden_quotes(results, corpus)) == 1


def test_an_expected_answer_of_a_quoted_query_is_exempt() -> None:
    results = [q("a", LONG_A, expected=("doc.md",)), q("b", LONG_B), q("c", LONG_C)]
    corpus = [chunk("doc.md", f"{LONG_A} {LONG_B}")]
    assert scan_golden_quotes(results, corpus) == []
    corpus = [chunk("doc.md", f"{LONG_A} {LONG_B} {LONG_C}")]
    (found,) = scan_golden_quotes(results, corpus)
    assert [x.query_id for x in found.quoted] == ["b", "c"]


def test_exemption_covers_the_whole_document_even_with_a_heading_pinned() -> None:
    pinned = replace(q("a", LONG_A), expected=(ExpectedEntry("doc.md", "Some other section"),))
    results = [pinned, q("b", LONG_B)]
    assert (
        scan_golden_quotes(results, [chunk("doc.md", f"{LONG_A} {LONG_B}", heading="Intro")]) == []
    )


def test_exemption_by_any_query_sharing_the_wording() -> None:
    results = [q("a", LONG_A), q("a2", LONG_A.title(), expected=("doc.md",)), q("b", LONG_B)]
    assert scan_golden_quotes(results, [chunk("doc.md", f"{LONG_A} {LONG_B}")]) == []


def test_rank_in_top_k_comes_from_that_querys_retrieved_list() -> None:
    results = [
        q("a", LONG_A, top=("x.md", "note.md", "note.md")),
        q("b", LONG_B, top=("x.md", "y.md")),
    ]
    (found,) = scan_golden_quotes(results, [chunk("note.md", f"{LONG_A} {LONG_B}")])
    assert found.quoted == (QuotedQuery("a", 2), QuotedQuery("b", None))


def test_fields_are_scanned_separately_and_never_joined() -> None:
    results = [q("a", LONG_A), q("b", LONG_B)]
    in_fields = [chunk("n.md", content=LONG_B, heading=LONG_A.upper())]
    assert len(scan_golden_quotes(results, in_fields)) == 1
    in_context = [chunk("n.md", content=LONG_B, context=f"Notes > {LONG_A}")]
    assert len(scan_golden_quotes(results, in_context)) == 1
    # "...fusion" ends the heading and "work" starts the body: no quote across the seam
    split = [chunk("n.md", content=f"work. {LONG_B}", heading="how does reciprocal rank fusion")]
    assert scan_golden_quotes(results, split) == []


def test_findings_are_sorted_by_path() -> None:
    results = [q("a", LONG_A), q("b", LONG_B)]
    both = f"{LONG_A} {LONG_B}"
    found = scan_golden_quotes(results, [chunk("z.md", both), chunk("a/b.md", both)])
    assert [f.path for f in found] == ["a/b.md", "z.md"]


# --------------------------------------------------------------------------- warning


def test_no_findings_no_warning() -> None:
    assert findings_warning([]) is None


def test_warning_block_layout_is_ascii() -> None:
    findings = [
        Finding(
            "golden-queries-quoted",
            "engineering/deep-dive/rag/evaluation.md",
            (QuotedQuery("torch-compile", None), QuotedQuery("cross-encoder-reranker", 9)),
        )
    ]
    text = findings_warning(findings)
    assert text == (
        "groove eval: 1 document(s) quote 2 or more golden queries verbatim "
        "(golden-queries-quoted).\n"
        "  engineering/deep-dive/rag/evaluation.md\n"
        "    torch-compile (not in top_k)\n"
        "    cross-encoder-reranker (rank 9)\n"
        "  Either these notes leaked into the corpus, or the queries came from them\n"
        "  and the documents belong in `expected`. groove eval changes neither.\n"
    )
    assert text.isascii()


def test_warning_names_the_program() -> None:
    text = findings_warning([Finding("golden-queries-quoted", "n.md", ())], prog="groove")
    assert text is not None and text.startswith("groove: 1 document(s)")
