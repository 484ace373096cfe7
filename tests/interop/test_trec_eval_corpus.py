"""Every metric on real runs, through ``groove eval``: the kb-eval corpus (binary and
graded) and a generated graded BEIR dataset, each re-scored by pytrec_eval (and ranx,
slow) from the exported TREC files; and the judgements' round trip through BEIR."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval
import yaml

from conftest import REPO_ROOT
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.evaluation.runs.record import QueryResult, evaluate_query
from pytest_groove.interop.beir import note_names
from pytest_groove.scoring.metric_names import OPTIONAL_METRICS
from pytest_groove.search.hits import SearchHit
from tests.helpers.cli_invoke import Groove

ROOT = REPO_ROOT
KB_EVAL = ROOT / "tests" / "corpora" / "kb-eval"
KB_EVAL_GOLDEN = ROOT / "tests" / "corpora" / "kb-eval-golden.yml"
KS = (1, 5, 10)
LIMIT = 10
TOLERANCE = 1e-12
METRICS_FLAG = ",".join(OPTIONAL_METRICS)

#: our aggregate JSON -> pytrec_eval's measure (per k where the key is a k-map)
TREC = {
    "recall_at_k": "recall_{k}",
    "mrr": "recip_rank",
    "ndcg_at_k": "ndcg_cut_{k}",
    "precision_at_k": "P_{k}",
    "hit_rate_at_k": "success_{k}",
    "map": "map",
    "r_precision": "Rprec",
}
RANX = {
    "recall_at_k": "recall@{k}",
    "mrr": "mrr",
    "ndcg_at_k": "ndcg@{k}",
    "precision_at_k": "precision@{k}",
    "hit_rate_at_k": "hit_rate@{k}",
    "map": f"map@{LIMIT}",
    "r_precision": "r-precision",
}


def evaluate(groove: Groove, kb: Path, folder: Path, *extra: str) -> dict[str, Any]:
    """``groove eval --format json`` with every metric and both TREC files in folder."""
    code, out, _ = groove(
        "eval",
        "--kb-path",
        kb,
        "--model",
        "hash",
        "--metrics",
        METRICS_FLAG,
        "--format",
        "json",
        "--trec-run",
        folder / "run.trec",
        "--trec-qrels",
        folder / "qrels.trec",
        *extra,
    )
    assert code == 0, out
    report: dict[str, Any] = json.loads(out)
    return report


def flat(aggregate: dict[str, Any], table: dict[str, str]) -> dict[str, tuple[float, str]]:
    """Our aggregate as {their measure name: (our value, our key)}."""
    out: dict[str, tuple[float, str]] = {}
    for key, name in table.items():
        value = aggregate[key]
        if isinstance(value, dict):
            for k, item in value.items():
                out[name.format(k=k)] = (item, f"{key}[{k}]")
        else:
            out[name] = (value, key)
    return out


def pytrec_means(folder: Path, names: list[str]) -> dict[str, float]:
    """pytrec_eval's mean of each measure over every query of the qrels."""
    with open(folder / "qrels.trec", encoding="utf-8") as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(folder / "run.trec", encoding="utf-8") as handle:
        run = pytrec_eval.parse_run(handle)
    families = {name.rsplit("_", 1)[0] if name[-1].isdigit() else name for name in names}
    measures = {
        f"{family}.{','.join(map(str, KS))}"
        if family in {"recall", "ndcg_cut", "P", "success"}
        else family
        for family in families
    }
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    return {
        name: sum(per_query.get(qid, {}).get(name, 0.0) for qid in qrels) / len(qrels)
        for name in names
    }


def ranx_means(folder: Path, names: list[str]) -> dict[str, float]:
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    qrels = Qrels.from_file(str(folder / "qrels.trec"), kind="trec")
    run = Run.from_file(str(folder / "run.trec"), kind="trec")
    found = ranx_evaluate(qrels, run, names, make_comparable=True)
    return {name: float(found[name]) for name in names}


def largest_diff(ours: dict[str, tuple[float, str]], theirs: dict[str, float]) -> float:
    return max(abs(value - theirs[name]) for name, (value, _key) in ours.items())


def kb_eval(tmp_path: Path, graded: bool) -> Path:
    kb = tmp_path / "kb"
    shutil.copytree(KB_EVAL, kb, ignore=shutil.ignore_patterns(".groove*"))
    golden = yaml.safe_load(KB_EVAL_GOLDEN.read_text(encoding="utf-8"))
    if graded:
        paths = sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md"))
        for index, query in enumerate(golden["queries"]):
            for position, entry in enumerate(query["expected"]):
                entry["grade"] = 1 + (index + position) % 3
            if index % 4 == 0:  # a judged, not relevant document
                taken = {entry["path"] for entry in query["expected"]}
                other = next(p for p in paths if p not in taken)
                query["expected"].append({"path": other, "grade": 0})
    (kb / ".groove-eval.yml").write_text(yaml.safe_dump(golden, allow_unicode=True), "utf-8")
    return kb


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_kb_eval_numbers_are_pytrec_evals(tmp_path: Path, graded: bool, groove: Groove) -> None:
    kb = kb_eval(tmp_path, graded)
    report = evaluate(groove, kb, tmp_path, "--no-history")
    ours = flat(report["aggregate"], TREC)
    assert largest_diff(ours, pytrec_means(tmp_path, list(ours))) <= TOLERANCE
    assert ("gain" in report["fingerprint"]) is graded
    grades = {e.get("grade", 1) for q in report["per_query"] for e in q["expected"]}
    assert grades == ({0, 1, 2, 3} if graded else {1})


@pytest.mark.slow
@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_kb_eval_numbers_are_ranxs(tmp_path: Path, graded: bool, groove: Groove) -> None:
    pytest.importorskip("ranx")
    kb = kb_eval(tmp_path, graded)
    report = evaluate(groove, kb, tmp_path, "--no-history")
    ours = flat(report["aggregate"], RANX)
    assert largest_diff(ours, ranx_means(tmp_path, list(ours))) <= TOLERANCE


def kb_to_beir(kb: Path, out: Path) -> None:
    """kb-eval as a BEIR dataset: one document per note (its KB path the id), the
    golden queries and their judgements (grades kept)."""
    golden = yaml.safe_load((kb / ".groove-eval.yml").read_text(encoding="utf-8"))
    out.mkdir()
    notes = sorted(kb.rglob("*.md"))
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as corpus:
        for note in notes:
            doc = {"_id": note.relative_to(kb).as_posix(), "title": "", "text": note.read_text()}
            corpus.write(json.dumps(doc, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as queries:
        for query in golden["queries"]:
            queries.write(json.dumps({"_id": query["id"], "text": query["query"]}) + "\n")
    (out / "qrels").mkdir()
    rows = [
        f"{query['id']}\t{entry['path']}\t{entry.get('grade', 1)}\n"
        for query in golden["queries"]
        for entry in query["expected"]
    ]
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(rows))


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_kb_eval_judgements_survive_a_beir_round_trip(
    tmp_path: Path, graded: bool, groove: Groove
) -> None:
    # The imported KB is chunked differently (one section per note), so its own
    # rankings differ; the judgements must not: the original run's rankings, renamed
    # to the imported notes, score exactly the same against the imported golden file.
    kb = kb_eval(tmp_path, graded)
    report = evaluate(groove, kb, tmp_path, "--no-history")
    kb_to_beir(kb, tmp_path / "beir")
    imported = tmp_path / "imported"
    code, out, _ = groove("import", "beir", tmp_path / "beir", "--kb-path", imported)
    assert code == 0, out
    golden = load_golden(imported / ".groove-eval.yml", imported)
    names = note_names(sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md")))
    by_id = {query.id: query for query in golden.queries}
    for stored in report["per_query"]:
        original = QueryResult.from_json(stored)
        hits = [
            SearchHit(rank=h.rank, path=names[h.path], heading=h.heading, score=h.score)
            for h in original.top_k
        ]
        again = evaluate_query(by_id[original.id], hits, KS, OPTIONAL_METRICS)
        assert again.metrics == original.metrics, original.id
    relevant = [q for q in report["per_query"] if any(e.get("grade", 1) for e in q["expected"])]
    assert len(golden.queries) == len(relevant)


# --------------------------------------------------------------------------- BEIR, graded

DOCS = [
    ("d1", "Rolling back a deploy", "Roll back the release with the previous image tag."),
    ("d2", "Deploy checklist", "Before a deploy, run the smoke tests and tag the image."),
    ("d3", "Database backups", "Nightly backups of the database are kept for thirty days."),
    ("d4", "Restoring a backup", "Restore the database from the newest nightly backup."),
    ("d5", "Rate limiting", "Each caller has a token bucket; an empty bucket answers 429."),
    ("d6", "OAuth redirect", "The redirect URI must match the registered one exactly."),
    ("d7", "Token refresh", "Refresh tokens expire after thirty days without use."),
    ("d8", "Incident review", "Write the review within a week; name no one."),
]
QUERIES = [
    ("q1", "roll back a deploy to the previous image"),
    ("q2", "restore the database from a backup"),
    ("q3", "what happens when the token bucket is empty"),
    ("q4", "oauth redirect uri and refresh tokens"),
    ("q5", "write the incident review"),
]
QRELS = [
    ("q1", "d1", 3),
    ("q1", "d2", 1),
    ("q2", "d4", 2),
    ("q2", "d3", 1),
    ("q2", "d8", 0),
    ("q3", "d5", 2),
    ("q4", "d6", 2),
    ("q4", "d7", 3),
    ("q5", "d8", 1),
]


def write_graded_beir(root: Path) -> Path:
    root.mkdir()
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS)
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": x}) + "\n" for i, x in QUERIES)
    )
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in QRELS)
    )
    return root


def test_a_graded_beir_dataset_imported_gated_exported_scores_as_pytrec_eval(
    tmp_path: Path,
    groove: Groove,
) -> None:
    dataset = write_graded_beir(tmp_path / "beir")
    kb = tmp_path / "kb"
    code, out, _ = groove("import", "beir", dataset, "--kb-path", kb)
    assert code == 0, out
    assert "grade: 3" in (kb / ".groove-eval.yml").read_text(encoding="utf-8")
    first = evaluate(groove, kb, tmp_path)
    gated = evaluate(groove, kb, tmp_path, "--fail-on-regression")  # the gate passes: same run
    assert gated["diff"] is not None and gated["fingerprint"] == first["fingerprint"]
    assert gated["fingerprint"]["gain"] == "grade"
    assert gated["diff"]["map"] == 0.0 and gated["diff"]["precision_at_k"]["10"] == 0.0
    ours = flat(gated["aggregate"], TREC)
    assert largest_diff(ours, pytrec_means(tmp_path, list(ours))) <= TOLERANCE
    qrels = (tmp_path / "qrels.trec").read_text(encoding="utf-8").splitlines()
    assert "q1 0 d1.md 3" in qrels and "q2 0 d4.md 2" in qrels
