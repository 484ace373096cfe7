"""``groove tune`` through a real subprocess (hash embedder, tiny KBs)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.cli_invoke import CliRun, Groove
from tests.helpers.kb_files import golden_yaml

TOPICS = {
    "zebra/husbandry.md": (
        "Zebrafish husbandry",
        "Zebrafish tanks need stable water. Keep the zebrafish colony at 28 degrees.",
    ),
    "zebra/feeding.md": (
        "Feeding zebrafish larvae",
        "Larvae eat paramecia for the first week, then brine shrimp.",
    ),
    "zebra/breeding.md": (
        "Breeding",
        "Zebrafish pairs spawn at first light; collect the eggs with a sieve.",
    ),
    "zebra/imaging.md": (
        "Imaging zebrafish embryos",
        "Mount the embryos in low-melt agarose before confocal imaging.",
    ),
    "other/coffee.md": ("Coffee machine", "Descale the coffee machine every month."),
}
FILLERS = {f"filler/note{i}.md": (f"Note {i}", f"Meeting minutes number {i}.") for i in range(10)}

GOLDEN = golden_yaml(
    ("zebra-water", "zebrafish water temperature", "zebra/husbandry.md"),
    ("zebra-food", "what do zebrafish larvae eat", "zebra/feeding.md"),
    ("zebra-eggs", "zebrafish spawn eggs", "zebra/breeding.md"),
    ("zebra-embryo", "zebrafish embryos confocal", "zebra/imaging.md"),
    ("descale", "descale", "other/coffee.md"),
)


def write_kb(root: Path, docs: dict[str, tuple[str, str]]) -> Path:
    for rel, (title, body) in docs.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def zebra_kb(tmp_path_factory: pytest.TempPathFactory, groove: Groove) -> Path:
    kb = write_kb(tmp_path_factory.mktemp("zebra") / "kb", {**TOPICS, **FILLERS})
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    indexed = groove("index", "--kb-path", str(kb), "--model", "hash")
    assert indexed.returncode == 0, indexed.stderr
    return kb


def tune(groove: Groove, kb: Path, *extra: str) -> CliRun:
    return groove("tune", "--kb-path", str(kb), "--model", "hash", "--no-reindex", *extra)


def _refuse_non_json(token: str) -> None:
    raise AssertionError(f"the report holds {token}, which is not JSON")


def test_json_report(zebra_kb: Path, groove: Groove) -> None:
    run = tune(groove, zebra_kb, "--format", "json", "--k", "3")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout, parse_constant=_refuse_non_json)  # strict JSON
    assert data["effective_query_count"] >= 1
    assert data["query_count"] == 5
    assert data["k_values"] == [3, 5]
    assert data["limit"] == 5
    assert data["candidate_pool"] == 50
    assert data["model"] == "hash"
    for d in data["diagnostics"]:
        if d["effective"]:
            assert not d["idf_clamped"]
    loo = data["loo"]
    assert isinstance(loo["mean_delta"], float)
    assert isinstance(loo["selection_stability"], float)
    assert isinstance(loo["sign_test"]["improved"], int)
    assert isinstance(data["per_query_impact"]["degraded"], int)
    assert data["verdict"]["decision"] in ("adopt", "keep_default")
    assert "recall@3" not in run.stdout  # k maps are keyed by the bare k
    assert data["secondary_metrics"]["baseline"]["recall_at_k"].keys() == {"3", "5"}


def test_text_report_and_stderr(zebra_kb: Path, tmp_path: Path, groove: Groove) -> None:
    config = tmp_path / "groove.toml"
    config.write_text(
        "[search.fusion]\nrrf_k = 30.0\n\n[search.mmr]\nenabled = true\n", encoding="utf-8"
    )
    run = tune(groove, zebra_kb, "--config", str(config), "--no-color")
    assert run.returncode == 0, run.stderr
    out, err = run.stdout, run.stderr
    assert out.startswith("groove tune — ")
    for needle in ("## Query diagnostics", "## Nested leave-one-query-out CV", "## Verdict"):
        assert needle in out
    assert "\x1b[" not in out
    # the seed's context warning, word for word (its em dash is the one non-ASCII mark)
    assert "groove tune: WARNING \u2014 every chunk has an empty context column, so the\n" in err
    assert err.replace("WARNING \u2014", "WARNING -").isascii(), [
        line for line in err.splitlines() if not line.isascii()
    ]
    # notes first, then the pre-flight, the context warning, effective N, the small-N warning
    order = [
        "[search.mmr] / [search.parent_retriever]",
        "[search.fusion] is customised",
        "pre-flight",
        "bm25_context_weight axis is a no-op",
        'not "has no effect"',
        "golden queries are effective",
        "WARNING: effective N =",
        "sweeping 64 bm25 weight conditions x 6 rrf_k values",
        "[5/5] sweeping 64 weight conditions for descale",
        "cost split:",
    ]
    positions = [err.find(needle) for needle in order]
    assert all(p >= 0 for p in positions), list(zip(order, positions, strict=True))
    assert positions == sorted(positions)


@pytest.mark.slow
def test_plot_writes_a_png(zebra_kb: Path, tmp_path: Path, groove: Groove) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "grid.png"
    run = tune(groove, zebra_kb, "--plot", str(plot), "--format", "json")
    assert run.returncode == 0, run.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"heatmap written to {plot}" in run.stderr
    json.loads(run.stdout)  # the plot never mixes into stdout


def test_no_effective_query_exits_2_without_stdout(tmp_path: Path, groove: Groove) -> None:
    kb = write_kb(tmp_path / "kb", {"a.md": ("Apples", "Red fruit."), "b.md": ("Pears", "Green.")})
    golden = tmp_path / "golden.yml"
    golden.write_text(
        textwrap.dedent(
            """\
            queries:
              - id: nothing-here
                query: "qwxz vvbn"
                expected:
                  - path: a.md
              - query: "jjkk"
                expected:
                  - path: b.md
            """
        ),
        encoding="utf-8",
    )
    run = groove("tune", "--kb-path", str(kb), "--model", "hash", "--golden", str(golden))
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    assert "fewer than 2 FTS candidates" in run.stderr
    assert "  nothing-here: FTS candidates = 0" in run.stderr
    assert "  jjkk: FTS candidates = 0" in run.stderr
    assert "no-op" not in run.stderr  # the context warning needs a grid run
    assert run.stderr.isascii()


def test_bad_format_is_a_usage_error(zebra_kb: Path, groove: Groove) -> None:
    run = tune(groove, zebra_kb, "--format", "xml")
    assert run.returncode == 2
    assert "invalid choice" in run.stderr


def test_missing_golden_is_an_error(tmp_path: Path, groove: Groove) -> None:
    kb = write_kb(tmp_path / "kb", {"a.md": ("A", "text")})
    run = groove("tune", "--kb-path", str(kb), "--model", "hash")
    assert run.returncode == 1
    assert run.stderr.startswith("Error: no golden file at ")
    assert "Traceback" not in run.stderr


def test_plot_without_matplotlib_fails_before_any_work(
    zebra_kb: Path, tmp_path: Path, groove: Groove
) -> None:
    hide = "import sys; sys.modules['matplotlib'] = None; from pytest_groove.cli import main; "
    run = groove.process(
        "tune",
        "--kb-path",
        str(zebra_kb),
        "--model",
        "hash",
        "--plot",
        str(tmp_path / "grid.png"),
        python=[sys.executable, "-c", hide + "sys.exit(main(sys.argv[1:]))"],
    )
    assert run.returncode == 1
    assert "matplotlib" in run.stderr and "pytest-groove[plots]" in run.stderr
    assert "pre-flight" not in run.stderr
    assert not (tmp_path / "grid.png").exists()


def test_plot_needs_an_image_suffix(zebra_kb: Path, tmp_path: Path, groove: Groove) -> None:
    run = tune(groove, zebra_kb, "--plot", str(tmp_path / "grid.txt"))
    assert run.returncode == 2
    assert "--plot" in run.stderr and ".png" in run.stderr


def test_the_context_warning_says_why_for_an_index_whose_breadcrumb_is_not_searched(
    tmp_path: Path,
    groove: Groove,
) -> None:
    # contextual mode with full_text = false: the breadcrumb is embedded, the context
    # column stays empty -- the axis is still a no-op, but not because contextual
    # retrieval is off
    kb = write_kb(tmp_path / "kb", {**TOPICS, **FILLERS})
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / "groove.toml").write_text(
        "[contextual]\nenabled = true\nfull_text = false\n", encoding="utf-8"
    )
    run = groove("tune", "--kb-path", str(kb), "--model", "hash")
    assert run.returncode == 0, run.stderr
    assert "contextual retrieval is off" not in run.stderr + run.stdout
    assert "the breadcrumb is embedded but not searched: [contextual] full_text = false" in (
        run.stderr.replace("\n", " ")
    )
    assert "(the breadcrumb is embedded but not searched" in run.stdout
