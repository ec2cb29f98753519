"""`sweep report` never removes what it did not write: its report dir is written only when absent,
empty or an earlier report (anything else refused in one line, exit 2, nothing touched), by one
writer at a time; a full disk leaves the previous report. Unreadable Parquet parts are named in a
warning and skipped (report and viewer), and text from results cannot break report.md's tables."""

from __future__ import annotations

import errno
import html
import os
import re
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from sweep.cli import main
from sweep.report.load import committed_parts
from sweep.store.targets import REPORT_MARK, own_beside
from sweep.view.data import ViewData
from tests.results_helpers import add_columns, run_in_process, sweep_config

EPISODES = 15  # 5 methods x 3 items x 1 seed


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("targets")
    cfg = sweep_config("simulated", tmp / "sim", "datasets.0.limit=3", "seeds=[0]", "rounds=1", tmp=tmp)
    return run_in_process(cfg)


@pytest.fixture
def out(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of the small sweep (tests change it)."""
    return Path(shutil.copytree(made, tmp_path / "sim"))


@pytest.fixture
def no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip the PNGs (most of a report's time) where only the target's handling is tested."""
    monkeypatch.setattr("sweep.report.build.make_figures", lambda t, out: [])


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (itself included) with its bytes (None for a dir)."""
    paths = [root, *root.rglob("*")] if root.exists() else []
    return {str(p.relative_to(root.parent)): None if p.is_dir() else p.read_bytes() for p in paths}


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Run `sweep report ... --no-tracking` in-process: (exit code, stderr)."""
    code = main(["report", *argv, "--no-tracking"])
    return code, capsys.readouterr().err


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def summary_episodes(report_dir: Path) -> int:
    return int(pl.read_parquet(report_dir / "summary.parquet")["episodes"].sum())


def _user_files(p: Path) -> None:
    p.mkdir()
    (p / "thesis.tex").write_text("my thesis")
    (p / "data").mkdir()
    (p / "data" / "x.csv").write_text("1,2")


def _hidden_only(p: Path) -> None:
    p.mkdir()
    (p / ".git").mkdir()


def _study(p: Path) -> None:
    p.mkdir()
    (p / "study.journal").write_text("{}\n")


def _training(p: Path) -> None:
    p.mkdir()
    (p / "train.resolved.yaml").write_text("name: t\n")


def _marked_sweep(p: Path) -> None:  # an earlier report's mark cannot make a sweep's results removable
    p.mkdir()
    (p / REPORT_MARK).write_text("{}")
    (p / "episodes").mkdir()
    (p / "episodes" / "part-1.parquet").write_bytes(b"PAR1")


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (_user_files, "already holds other files (e.g. 'data')"),
        (_hidden_only, "already holds other files (e.g. '.git')"),
        (_study, "holds a study, not a sweep report"),
        (_training, "holds a training, not a sweep report"),
        (_marked_sweep, "also holds 'episodes'"),
        (lambda p: p.write_text("keep me"), "is a file, not a report directory"),
    ],
    ids=["user-folder", "hidden-only", "study", "training", "marked-sweep", "file"],
)
def test_a_report_dir_holding_anything_but_a_report_is_refused_untouched(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, words: str
) -> None:
    target = tmp_path / "place" / "target"
    target.parent.mkdir()
    make(target)  # type: ignore[operator]
    before, episodes = snapshot(target.parent), snapshot(out / "episodes")
    code, err = report(capsys, str(out), "--report-dir", str(target))
    line = one_error(err)
    assert code == 2 and "--report-dir" in line and str(target) in line and words in line
    assert snapshot(target.parent) == before  # no lock file, no temp dir beside it
    assert snapshot(out / "episodes") == episodes


@pytest.mark.parametrize("which", ["itself", "its-parent", "another-sweep"])
def test_a_sweep_dir_as_report_dir_is_refused_and_its_results_stay(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    other = tmp_path / "other"
    if which == "another-sweep":
        shutil.copytree(out, other)
    target = {"itself": out, "its-parent": tmp_path, "another-sweep": other}[which]
    before = snapshot(tmp_path)
    code, err = report(capsys, str(out), "--report-dir", str(target))
    line = one_error(err)
    assert code == 2 and "--report-dir" in line
    expected = "holds a sweep's results" if which == "another-sweep" else "holds the results being reported"
    assert expected in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("state", ["absent", "empty"])
def test_an_absent_or_empty_report_dir_is_written_with_the_mark(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plots: None, state: str
) -> None:
    target = tmp_path / "reports" / "r1"
    if state == "empty":
        target.mkdir(parents=True)
    code, err = report(capsys, str(out), "--report-dir", str(target))
    assert code == 0, err
    assert (target / REPORT_MARK).is_file() and '"report"' in (target / REPORT_MARK).read_text()
    assert summary_episodes(target) == EPISODES and (target / "report.md").is_file()
    assert sorted(p.name for p in target.parent.iterdir()) == [".r1.lock", "r1"]  # nothing else left


def test_an_earlier_report_is_replaced_and_only_marked_leftovers_are_removed(
    out: Path, capsys: pytest.CaptureFixture[str], no_plots: None
) -> None:
    assert report(capsys, str(out))[0] == 0
    (out / "report" / "stale.csv").write_text("from the earlier report")
    # What a crashed earlier write leaves (marked), and a user's dir that merely looks alike.
    for name in (".report.tmp-crashed", ".report.old-crashed"):
        shutil.copytree(out / "report", out / name)
    (out / ".report.tmp-mine").mkdir()
    (out / ".report.tmp-mine" / "notes.txt").write_text("mine")
    code, err = report(capsys, str(out))
    assert code == 0, err
    assert not (out / "report" / "stale.csv").exists() and (out / "report" / REPORT_MARK).is_file()
    left = sorted(p.name for p in out.iterdir() if p.name.startswith(".report"))
    assert left == [".report.lock", ".report.tmp-mine"]
    assert (out / ".report.tmp-mine" / "notes.txt").read_text() == "mine"


def test_a_second_writer_is_refused_naming_the_holder(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "rep"
    lock = own_beside(target, "report dir", "--report-dir")
    try:
        code, err = report(capsys, str(out), "--report-dir", str(target))
    finally:
        lock.release()
    line = one_error(err)
    assert code == 2 and f"pid {os.getpid()}" in line and "--report-dir" in line and "rep" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rep.lock", "sim"]


def test_an_unwritable_place_is_one_line(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("x")
    code, err = report(capsys, str(out), "--report-dir", str(tmp_path / "afile" / "rep"))
    line = one_error(err)
    assert code == 2 and "cannot write" in line and "--report-dir" in line
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS])
def test_a_place_refused_by_the_file_system_while_writing_is_one_line(
    out: Path, capsys: pytest.CaptureFixture[str], no_plots: None, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def refused(*args: object, **kwargs: object) -> str:  # as for a non-root user in a read-only place
        raise (PermissionError if code == errno.EACCES else OSError)(code, os.strerror(code))

    monkeypatch.setattr("sweep.report.build.tempfile.mkdtemp", refused)
    exit_code, err = report(capsys, str(out))
    line = one_error(err)
    assert exit_code == 2 and "cannot write" in line and os.strerror(code) in line
    assert not (out / "report").exists()


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        RuntimeError("parquet: No space left on device (os error 28)"),
    ],
    ids=["errno", "polars-text"],
)
def test_a_full_disk_is_one_line_and_the_previous_report_stays(
    out: Path,
    capsys: pytest.CaptureFixture[str],
    no_plots: None,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
) -> None:
    assert report(capsys, str(out))[0] == 0
    before = snapshot(out / "report")

    def full(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr("sweep.report.build.write_html", full)
    code, err = report(capsys, str(out))
    line = one_error(err)
    assert code == 1 and "the disk is full" in line and str(out) in line
    assert snapshot(out / "report") == before
    assert not [p for p in out.iterdir() if p.name.startswith((".report.tmp-", ".report.old-"))]


def _write_garbage(p: Path, real: bytes) -> None:
    p.write_bytes(b"\x00not parquet\xff" * 64)


def _truncate(p: Path, real: bytes) -> None:
    p.write_bytes(real[: len(real) // 2])


def _overwrite_data(p: Path, real: bytes) -> None:
    """Footer intact (its schema reads), the first column's pages overwritten: fails only on reading."""
    p.write_bytes(real[:4] + b"\xff" * 76 + real[80:])


# shape -> (how to make it, what the warning gives as the reason)
SHAPES = {
    "zero-bytes": (lambda p, real: p.write_bytes(b""), "(0 bytes)"),
    "garbage": (_write_garbage, "PAR1"),
    "truncated": (_truncate, "PAR1"),
    "directory": (lambda p, real: p.mkdir(), "(a directory, not a file)"),
    "data-overwritten": (_overwrite_data, "parquet"),
    "dangling-symlink": (
        lambda p, real: p.symlink_to(p.parent / "gone.parquet"),
        "(a symlink to a missing file)",
    ),
    "fifo": (lambda p, real: os.mkfifo(p), "(not a regular file)"),  # never opened: it would block
    "other-parquet": (
        lambda p, real: pl.DataFrame({"x": [1]}).write_parquet(p),
        "without the column 'episode_id'",
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_unreadable_part_is_named_and_skipped_never_moved(
    out: Path, capsys: pytest.CaptureFixture[str], no_plots: None, shape: str
) -> None:
    real = committed_parts(out)[0]
    bad = real.with_name("part-29991231T000000000000Z-broken00.parquet")  # sorts after the real one
    make, reason = SHAPES[shape]
    make(bad, real.read_bytes())
    code, err = report(capsys, str(out))
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert (
        len(warnings) == 1 and f"skipping unreadable part {bad} (" in warnings[0] and reason in warnings[0]
    ), err
    assert "rerun the sweep" in warnings[0] and not err.replace(warnings[0], "").strip()
    assert summary_episodes(out / "report") == EPISODES
    assert os.path.lexists(bad) and committed_parts(out) == [real, bad]  # a reader moves nothing
    view = ViewData([out])  # the viewer reads the same way
    assert view.index.height == EPISODES and f"skipping unreadable part {bad}" in capsys.readouterr().err


def test_an_unreadable_rounds_part_is_skipped_too(
    out: Path, capsys: pytest.CaptureFixture[str], no_plots: None
) -> None:
    rounds = out / "rounds" / committed_parts(out)[0].name
    _truncate(rounds, rounds.read_bytes())
    code, err = report(capsys, str(out))
    assert code == 0 and f"warning: skipping unreadable part {rounds} (" in err
    assert summary_episodes(out / "report") == EPISODES


def test_no_readable_part_left_is_one_error_line_and_nothing_written(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for part in committed_parts(out):
        _write_garbage(part, b"")
    before = snapshot(out)
    code, err = report(capsys, str(out))
    lines = err.strip().splitlines()
    assert code == 2 and lines[-1].startswith("error: ") and str(out) in lines[-1], err
    assert all(line.startswith("warning: skipping unreadable part") for line in lines[:-1]) and lines[:-1]
    assert snapshot(out) == before  # no report dir, no lock file
    assert main(["view", str(out), "--export", str(tmp_path / "page.html")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: ")


HOSTILE_LABEL = (
    "a|b\nc\\|d `code` <script>alert(1)</script> [x](http://evil.example) ![i][r] **e** _f_ ~~g~~ &lt;h&gt;"
)


def test_text_from_results_cannot_break_or_inject_into_report_md(
    out: Path, capsys: pytest.CaptureFixture[str], no_plots: None
) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    for part in committed_parts(out):
        add_columns(
            part, {"method_label": (pa.string(), lambda r: HOSTILE_LABEL if r["method"] == "cot" else None)}
        )
        add_columns(part, {"dataset": (pa.string(), "data|set<b>")})
    code, err = report(capsys, str(out))
    assert code == 0, err
    text = (out / "report" / "report.md").read_text()
    rendered = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)
    assert re.search(r"<strong>[\d.]+</strong>", rendered)  # the papers' layout still bolds the best
    for tag in ("<script", "<a ", "<img", "<code", "<em", "<strong>e", "<s>", "<b>"):
        assert tag not in rendered, tag
    shown = " ".join(HOSTILE_LABEL.split("\n"))
    cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", rendered)]
    assert shown in cells  # the label's cell shows it exactly, as text
    # Every row of every table keeps its header's column count.
    for table in re.findall(r"<table>.*?</table>", rendered, flags=re.S):
        heads = len(re.findall(r"<th>", table))
        assert all(
            len(re.findall(r"<td>", row)) == heads for row in re.findall(r"<tr>\n<td>.*?</tr>", table, re.S)
        )
    page = (out / "report" / "index.html").read_text()
    assert "<script" not in page and "&lt;script&gt;" in page  # the HTML report stays escaped
