"""The table of report files (``evaluation/reports/formats.py``) and its readers.

Each entry names an option of the shared option table; the readers (the report-target
check, the extra check, the writer) follow the table's order and nothing else.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import cast

import pytest

from pytest_groove.evaluation.reports import formats
from pytest_groove.evaluation.reports.formats import (
    REPORT_FORMATS,
    ReportFormat,
    ReportInputs,
    check_report_extras,
    report_files,
)
from pytest_groove.evaluation.reports.targets import report_targets
from pytest_groove.settings.options import OPTIONS_BY_NAME, RunOptions


def _nothing(path: Path, inputs: ReportInputs) -> None:
    return None


def test_every_report_file_is_a_path_option_of_the_shared_table() -> None:
    options = [fmt.option for fmt in REPORT_FORMATS]
    assert len(set(options)) == len(options)
    assert len({fmt.label for fmt in REPORT_FORMATS}) == len(options)
    run_fields = {field.name for field in fields(RunOptions)}
    for fmt in REPORT_FORMATS:
        assert OPTIONS_BY_NAME[fmt.option].kind == "path"
        assert fmt.dest in run_fields


def test_the_report_files_come_in_table_order(tmp_path: Path) -> None:
    given = {fmt.dest: tmp_path / fmt.option for fmt in reversed(REPORT_FORMATS)}
    options = RunOptions(**given)
    assert [fmt for fmt, _path in report_files(options)] == list(REPORT_FORMATS)
    assert report_targets(options) == [
        (fmt.option, tmp_path / fmt.option) for fmt in REPORT_FORMATS
    ]
    assert report_files(RunOptions()) == []


def test_an_extra_is_checked_only_when_its_file_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    entry = ReportFormat("html", "HTML report", _nothing, check=asked.append)
    monkeypatch.setattr(formats, "REPORT_FORMATS", (entry,))
    check_report_extras(RunOptions(), lambda name: f"--{name}")
    assert asked == []
    check_report_extras(RunOptions(html=tmp_path / "r.html"), lambda name: f"--{name}")
    assert asked == ["--html"]


def test_a_writer_s_os_error_names_the_file(tmp_path: Path) -> None:
    def full(path: Path, inputs: ReportInputs) -> None:
        raise OSError(28, "No space left on device")

    target = tmp_path / "r.html"
    problem = ReportFormat("html", "HTML report", full).write_file(target, cast(ReportInputs, None))
    assert problem == f"could not write the HTML report {target}: No space left on device"
    assert (
        ReportFormat("html", "HTML report", _nothing).write_file(target, cast(ReportInputs, None))
        is None
    )
