"""The report formats an evaluation writes to files: one table, every door reads it.

Each entry of :data:`REPORT_FORMATS` says once what the rest of the package used to
repeat: which option names the file (an option of the shared table,
:mod:`pytest_groove.settings.options`: ``--<option>`` for ``groove eval``,
``--groove-<option>`` / ``groove_<option>`` under pytest), what the file is called in
the notes and errors, how it is written, whether its content says that the run was
recorded, and which extra it needs.  The readers iterate the table:

- the plan checks that no report file would replace an input (:mod:`.targets`) and
  that a format's extra is installed (:func:`check_report_extras`);
- the end of the run writes each file asked for (``evaluation/finish.py``);
- the plugin names the files it did not write when nothing was scored
  (``plugin/unscored.py``); ``groove eval`` takes every format's option its table
  spells for the command line (``cli/evaluate.py``).

A format module writes with the hook ``(path, ReportInputs) -> None``, raising
:class:`~pytest_groove.errors.GrooveError` with its own line or :class:`OSError`
(worded here, naming the file).  The hooks below import their module when a file is
written, not before: the plan reads this table on every run, and the HTML report's
module is only paid for when ``--html`` is given.  A new format is its module, one
hook here and one entry in :data:`REPORT_FORMATS`, plus its ``path`` option in the
option table (which sits below this package and so cannot read it).  A format whose
content is text gives a ``render`` hook ``ReportInputs -> str`` instead
(:func:`text_writer` writes it), and ``groove eval --format <option>`` prints it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_groove.errors import Door, GrooveError
from pytest_groove.evaluation.reports.headline import ReportGate

if TYPE_CHECKING:
    from pytest_groove.evaluation.gate.baseline import BaselineChoice
    from pytest_groove.evaluation.gate.compare import Comparison
    from pytest_groove.evaluation.gate.verdict import RunVerdicts
    from pytest_groove.evaluation.runs.coverage import Coverage
    from pytest_groove.evaluation.runs.record import RunRecord
    from pytest_groove.scoring.records import GoldenQuery
    from pytest_groove.settings.options import RunOptions


@dataclass(frozen=True)
class ReportInputs:
    """What a report file is made from: the judged run, as every report shows it."""

    run: RunRecord
    comparison: Comparison
    #: the stored runs as read (the HTML report's trends)
    history: Sequence[RunRecord]
    verdicts: RunVerdicts
    #: the whole golden set (the TREC files' query ids)
    golden: Sequence[GoldenQuery]
    #: the door's name in its messages (``groove eval``, ``groove``)
    prog: str
    #: the JSON report, saying whether the run is recorded: given to the formats that
    #: say so (:attr:`ReportFormat.says_recorded`), None for the others
    json_report: dict[str, Any] | None = None
    #: what the gate decided (the verdict the Markdown and HTML reports lead with)
    gate: ReportGate = field(default_factory=ReportGate)
    #: how the baseline was chosen (the accepted baseline's file; None: none consulted)
    choice: BaselineChoice | None = None
    #: the options of the run (a format's own settings: ``--badge-metric``)
    options: RunOptions | None = None
    #: the door whose spelling of options the content uses
    door: Door = "cli"
    #: what the golden set covers of the KB in this run (None: not measured)
    coverage: Coverage | None = None


#: writes a report file; raises GrooveError (its own line) or OSError
Writer = Callable[[Path, ReportInputs], None]


@dataclass(frozen=True)
class ReportFormat:
    """One report file a run can write, named by an option of the shared table."""

    #: the option naming the file (``html``: ``--html`` / ``--groove-html``)
    option: str
    #: the file in messages: "HTML report written to PATH"
    label: str
    write: Writer
    #: the content says whether the run is recorded (the JSON report): written after
    #: the others, once that is known, and again when the history save then fails
    says_recorded: bool = False
    #: checks, before any index work, that the file can be made (an extra is
    #: installed); called with the option as the door spells it, raises GrooveError
    check: Callable[[str], None] | None = None
    #: the content as text, for a door that prints it (``groove eval --format
    #: <option>``); None: a file only.  A format with a ``render`` needs no ``write``
    #: of its own (:func:`text_writer`)
    render: Callable[[ReportInputs], str] | None = None

    @property
    def dest(self) -> str:
        """The option's field on :class:`RunOptions` (``trec-run`` -> ``trec_run``)."""
        return self.option.replace("-", "_")

    def target(self, options: RunOptions) -> Path | None:
        """The file ``options`` ask this report for (None: not asked for)."""
        value: Path | None = getattr(options, self.dest)
        return value

    def write_file(self, path: Path, inputs: ReportInputs) -> str | None:
        """Write the file: None, or the error message (flag tokens unspelled)."""
        try:
            self.write(path, inputs)
        except GrooveError as exc:  # the format's own line (an extra went missing, ...)
            return exc.raw_message
        except OSError as exc:
            return f"could not write the {self.label} {path}: {exc.strerror or exc}"
        return None


def text_writer(render: Callable[[ReportInputs], str]) -> Writer:
    """The writer of a format whose content is :attr:`ReportFormat.render`'s text:
    UTF-8, its folder made when it can be; raises OSError."""

    def write(path: Path, inputs: ReportInputs) -> None:
        text = render(inputs)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    return write


def _json(path: Path, inputs: ReportInputs) -> None:
    from pytest_groove.evaluation.reports.json_report import write_report

    write_report(path, inputs)


def _html(path: Path, inputs: ReportInputs) -> None:
    from pytest_groove.evaluation.reports.html_report import write_report

    write_report(path, inputs)


def _html_extra(shown_as: str) -> None:
    from pytest_groove.evaluation.reports.html_report import check_html_available

    check_html_available(shown_as)


def _trec_run(path: Path, inputs: ReportInputs) -> None:
    from pytest_groove.evaluation.reports.trec import write_run_report

    write_run_report(path, inputs)


def _trec_qrels(path: Path, inputs: ReportInputs) -> None:
    from pytest_groove.evaluation.reports.trec import write_qrels_report

    write_qrels_report(path, inputs)


def _markdown(inputs: ReportInputs) -> str:
    from pytest_groove.evaluation.reports.markdown_report import render_markdown

    return render_markdown(inputs)


def _badge(inputs: ReportInputs) -> str:
    from pytest_groove.evaluation.reports.badge import render_badge

    return render_badge(inputs)


#: every report file, in the order their options are checked and their notes said
REPORT_FORMATS: tuple[ReportFormat, ...] = (
    ReportFormat("json", "JSON report", _json, says_recorded=True),
    ReportFormat("html", "HTML report", _html, check=_html_extra),
    ReportFormat("trec-run", "TREC run file", _trec_run),
    ReportFormat("trec-qrels", "TREC qrels file", _trec_qrels),
    ReportFormat("markdown", "Markdown report", text_writer(_markdown), render=_markdown),
    ReportFormat("badge", "badge file", text_writer(_badge)),
)

#: the formats a door can print instead of writing a file (``groove eval --format``)
PRINTABLE_FORMATS: dict[str, ReportFormat] = {
    fmt.option: fmt for fmt in REPORT_FORMATS if fmt.render is not None
}


def report_files(options: RunOptions) -> list[tuple[ReportFormat, Path]]:
    """The report files ``options`` ask for, in table order."""
    wanted = ((fmt, fmt.target(options)) for fmt in REPORT_FORMATS)
    return [(fmt, path) for fmt, path in wanted if path is not None]


def check_report_extras(options: RunOptions, spell: Callable[[str], str]) -> None:
    """Fail fast, before any search, when a report asked for could not be made;
    ``spell(option)`` names the option in the message."""
    for fmt, _path in report_files(options):
        if fmt.check is not None:
            fmt.check(spell(fmt.option))
