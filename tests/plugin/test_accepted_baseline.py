"""The accepted baseline through pytest's door: known misses, golden and settings changes
gated, lost answers failing their items in every later run (one process and -n 2)."""

from __future__ import annotations

import pytest

NOTES = {
    "deploys.md": "## Release schedule\n\nReleases leave on Tuesday and Thursday mornings; "
    "nothing ships on Friday.\n",
    "oncall.md": "## Pager rotation\n\nEach engineer carries the pager for one week, Monday "
    "to Monday.\n",
    "tokens.md": "## Token rotation\n\nAPI tokens expire after ninety days; create the new "
    "token before revoking the old.\n",
    "caching.md": "## Cache invalidation\n\nThe ingest worker deletes the cached parcel "
    "status before writing a new event.\n",
}
GOLDEN = """\
queries:
  - id: schedule
    query: "release schedule tuesday thursday"
    expected: [{path: deploys.md}]
  - id: pager
    query: "pager rotation engineer week"
    expected: [{path: oncall.md}]
  - id: tokens
    query: "api tokens expire ninety days"
    expected: [{path: tokens.md}]
  - id: cache
    query: "ingest worker deletes cached parcel status"
    expected: [{path: caching.md}]
  - id: lunch
    query: "what is served for lunch on wednesdays"
    expected: [{path: kitchen.md}]
  - id: parking
    query: "where do visitors park their bicycles"
    expected: [{path: garage.md}]
"""
#: two expected notes that two distractors outrank: the two known misses
MISSED = {
    "canteen.md": "## Canteen\n\nLunch is served on Wednesdays in the canteen.\n",
    "visitors.md": "## Visitors\n\nVisitors park their bicycles by the main gate.\n",
    "kitchen.md": "## Kitchen\n\nThe kitchen is cleaned on Fridays.\n",
    "garage.md": "## Garage\n\nThe garage door code changes monthly.\n",
}
ONE_PROCESS: list[str] = []
XDIST = ["-n", "2"]


@pytest.fixture
def kb(pytester: pytest.Pytester) -> pytest.Pytester:
    for name, text in {**NOTES, **MISSED}.items():
        pytester.path.joinpath("kb").mkdir(exist_ok=True)
        pytester.path.joinpath("kb", name).write_text(text, encoding="utf-8")
    pytester.path.joinpath("kb", ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    config = 'model = "hash"\n\n[eval]\nk_values = [1]\n'
    pytester.path.joinpath("kb", "groove.toml").write_text(config, encoding="utf-8")
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--groove-kb", "kb", "-p", "no:randomly", *args)


@pytest.fixture(params=[ONE_PROCESS, XDIST], ids=["one-process", "xdist"])
def dist(request: pytest.FixtureRequest) -> list[str]:
    return list(request.param)


def test_an_accepted_golden_set_with_misses_arms_the_gate(
    kb: pytest.Pytester, dist: list[str]
) -> None:
    first = run(kb, "--groove-accept")
    first.assert_outcomes(passed=4, xfailed=2)  # accepted as known misses
    assert first.ret == pytest.ExitCode.OK
    assert (kb.path / "kb" / ".groove-baseline.json").is_file()
    again = run(kb, "--groove-fail-on-regression", *dist)
    again.assert_outcomes(passed=4, xfailed=2)
    assert again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines(["Aggregate (accepted baseline: *.groove-baseline.json)"])
    strict = run(kb, "--groove-strict", *dist)
    strict.assert_outcomes(passed=4, failed=2)
    # a known miss that passes now says so: accepting records it
    garage = "## Garage\n\nVisitors park their bicycles in the garage, never by the gate.\n"
    kb.path.joinpath("kb", "garage.md").write_text(garage, encoding="utf-8")
    visitors = "## Visitors\n\nGuests sign in at reception.\n"
    kb.path.joinpath("kb", "visitors.md").write_text(visitors, encoding="utf-8")
    better = run(kb, *dist)
    better.assert_outcomes(passed=5, xfailed=1)
    said = better.stdout.str() + better.stderr.str()
    assert (
        "1 known miss(es) of the accepted baseline now pass (parking): accept to record it "
        "(--groove-accept)"
    ) in said


def test_a_rewritten_answer_with_a_new_query_fails_and_lists_it(kb: pytest.Pytester) -> None:
    assert run(kb, "--groove-accept").ret == pytest.ExitCode.OK
    notes = kb.path / "kb"
    notes.joinpath("tokens.md").write_text("## Wiki\n\nAsk the platform team.\n", "utf-8")
    golden = GOLDEN + '  - id: friday\n    query: "nothing ships on friday"\n'
    notes.joinpath(".groove-eval.yml").write_text(
        golden + "    expected: [{path: deploys.md}]\n", encoding="utf-8"
    )
    red = run(kb, "--groove-fail-on-regression")
    assert red.ret == pytest.ExitCode.TESTS_FAILED
    red.stdout.fnmatch_lines(
        [
            "*golden changed: 1 added (friday); the gate compares the 6 paired queries*",
            "FAILED kb/.groove-eval.yml::tokens*",
        ]
    )


def test_a_settings_change_that_lowers_a_metric_fails_naming_it(
    kb: pytest.Pytester, dist: list[str]
) -> None:
    assert run(kb, "--groove-accept").ret == pytest.ExitCode.OK
    config = 'model = "hash"\n\n[eval]\nk_values = [1]\n\n[search.fusion]\nrrf_k = 1\n'
    kb.path.joinpath("kb", "groove.toml").write_text(config, encoding="utf-8")
    kb.path.joinpath("kb", "tokens.md").write_text("## Wiki\n\nSee the wiki.\n", "utf-8")
    red = run(kb, "--groove-fail-on-regression", *dist)
    assert red.ret == pytest.ExitCode.TESTS_FAILED
    assert "  settings changed: [search.fusion] rrf_k 60 -> 1\n" in red.stdout.str()
    said = red.stdout.str() + red.stderr.str()
    assert "Settings changed: [search.fusion] rrf_k 60 -> 1." in said


@pytest.mark.parametrize("accepted", [True, False], ids=["accepted", "run-log"])
def test_after_an_answer_is_deleted_every_later_run_fails_only_its_item(
    kb: pytest.Pytester, accepted: bool
) -> None:
    first = run(kb, *(["--groove-accept"] if accepted else []))
    # the two misses: known (xfail) once accepted, failures of their own otherwise
    misses = 0 if accepted else 2
    assert first.parseoutcomes().get("failed", 0) == misses
    kb.path.joinpath("kb", "caching.md").unlink()
    for args in ([], [], ["-n", "2"]):
        later = run(kb, *args)
        assert later.ret == pytest.ExitCode.TESTS_FAILED, later.stdout.str()
        assert later.parseoutcomes()["failed"] == misses + 1
        later.stdout.fnmatch_lines(["FAILED kb/.groove-eval.yml::cache - *"])
        later.stdout.fnmatch_lines(["*`caching.md` removed from the knowledge base*"])
    for args in (["-k", "schedule"], ["kb/.groove-eval.yml::pager"]):
        other = run(kb, *args)  # an IDE click on another query: it runs, and passes
        assert other.ret == pytest.ExitCode.OK, other.stdout.str()
        other.assert_outcomes(passed=1)
