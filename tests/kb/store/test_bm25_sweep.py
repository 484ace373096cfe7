"""bm25 for many weight triples from one pass equals SQLite's bm25, bit for bit."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pytest_groove.engine.builtin import Engine, open_engine
from pytest_groove.kb.store.bm25_sweep import PhraseHits, bm25_score_table
from pytest_groove.search.query.fts_query import parse_query
from pytest_groove.settings.config import IndexSettings, Settings
from pytest_groove.tune.grid import weight_triples


def bm25_scores(hits: PhraseHits, weights: Sequence[float]) -> npt.NDArray[np.float64]:
    """``bm25(table, *weights)`` of every row of ``hits`` (lower is better)."""
    return bm25_score_table(hits, [tuple(weights)])[:, 0]


SETTINGS = Settings(index=IndexSettings(model="hash"))
TRIPLES = [weights for _, weights in weight_triples()]
QUERIES = [
    "how do I roll back a deploy to the previous version",
    "バックアップ 復元",
    'deploy -"feature flag"',
    "cache invalidation -snapshot",
    "postmortem",
    "zzzz nothing matches this qqqq",
]


def _check(engine: Engine, queries: list[str]) -> None:
    for query in queries:
        parsed = parse_query(query)
        assert parsed.fts is not None
        table = parsed.fts_table
        hits = engine.store.fts_phrase_hits(parsed.fts, table)
        for weights in TRIPLES[::7]:
            sqlite = dict(
                engine.store.conn.execute(
                    f"SELECT rowid, bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ?",
                    (*weights, parsed.fts),
                )
            )
            ours = dict(zip(hits.rowids.tolist(), bm25_scores(hits, weights).tolist(), strict=True))
            assert ours == sqlite, (query, weights)  # exact float equality
        lists = engine.fts_legs(parsed, TRIPLES, 50)
        assert lists == [engine.fts_leg(parsed, w, 50) for w in TRIPLES], query
        # with the vector leg's list the script gate applies to each list alike
        vector_ids = engine.vector_leg(engine.embed_queries([parsed.positive])[0], 50, parsed)
        gated = engine.fts_legs(parsed, TRIPLES, 50, vector_ids)
        assert gated == [engine.fts_leg(parsed, w, 50, vector_ids) for w in TRIPLES], query


def test_equal_to_sqlite_on_kb_eval(kb_eval_copy: Path) -> None:
    with open_engine(kb_eval_copy, SETTINGS) as engine:
        _check(engine, QUERIES)


@pytest.mark.parametrize("seed", [1, 2])
def test_equal_to_sqlite_on_random_text(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "kappa",
        "lambda",
        "sigma",
    ]
    for number in range(60):
        sections = [
            f"## {' '.join(rng.choices(words, k=rng.randint(1, 3)))}\n\n"
            + " ".join(rng.choices(words, k=rng.randint(3, 80)))
            for _ in range(rng.randint(1, 4))
        ]
        (tmp_path / f"n{number}.md").write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    queries = [" ".join(rng.sample(words, rng.randint(1, 5))) for _ in range(8)]
    queries.append(f"{words[0]} {words[1]} -{words[2]}")
    with open_engine(tmp_path, SETTINGS) as engine:
        _check(engine, queries)
