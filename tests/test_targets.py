"""Every writing command's target: a dir holding another kind of output is refused, a second writer
is refused in one line naming the holder, and a place that cannot be written is one line (exit 2)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from sweep.config.errors import ConfigError
from sweep.store.ownership import LOCK_FILE, OutputBusy
from sweep.store.targets import (
    REPORT_MARK,
    Unwritable,
    _umask,
    dir_kind,
    own_beside,
    own_dir,
    refuse_other_kind,
    replace_file,
)


@pytest.mark.parametrize(
    ("files", "kind"),
    [
        ([], None),
        (["notes.txt"], None),
        (["config.resolved.yaml"], "sweep"),
        (["episodes/"], "sweep"),
        (["config.resolved.yaml", "study.resolved.yaml"], "study"),
        (["study.journal"], "study"),
        (["config.resolved.yaml", "train.resolved.yaml"], "train"),
        (["checkpoints/trainer.pt"], "train"),
        ([REPORT_MARK, "index.html"], "report"),
    ],
)
def test_the_kind_of_an_output_dir_is_read_from_its_files(
    tmp_path: Path, files: list[str], kind: str | None
) -> None:
    for name in files:
        path = tmp_path / name
        if name.endswith("/"):
            path.mkdir(parents=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")
    assert dir_kind(tmp_path) == kind


def test_a_file_or_an_absent_path_holds_no_kind(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert dir_kind(tmp_path / "f") is None and dir_kind(tmp_path / "absent") is None


def test_another_kind_of_output_is_refused_in_one_line_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "episodes").mkdir()
    (tmp_path / "config.resolved.yaml").write_text("name: a sweep\n")
    with pytest.raises(ConfigError) as e:
        own_dir(tmp_path, "train", "fp")
    text = str(e.value)
    assert "holds a sweep's results, not a training" in text and "output_dir" in text and "\n" not in text
    assert not (tmp_path / LOCK_FILE).exists()  # refused before the lock file is made
    refuse_other_kind(tmp_path, "sweep")  # its own kind is fine
    lock = own_dir(tmp_path, "sweep", "id")
    lock.release()


def test_a_second_trainer_is_refused_naming_the_holder_and_no_join(tmp_path: Path) -> None:
    first = own_dir(tmp_path / "t", "train", "fp")
    try:
        with pytest.raises(OutputBusy) as e:
            own_dir(tmp_path / "t", "train", "fp", join=True)  # a training cannot be joined
        text = str(e.value)
        assert f"pid {os.getpid()}" in text and "--join" not in text and "--out" in text and "\n" not in text
    finally:
        first.release()
    again = own_dir(tmp_path / "t", "train", "fp")
    again.release()


def test_a_sweep_may_still_be_joined(tmp_path: Path) -> None:
    owner = own_dir(tmp_path, "sweep", "id")
    try:
        worker = own_dir(tmp_path, "sweep", "id", join=True)
        assert worker.role == "worker"
        worker.release()
    finally:
        owner.release()


def test_a_target_replaced_whole_is_locked_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "report"
    first = own_beside(target, "report dir", "--report-dir")
    try:
        assert (tmp_path / ".report.lock").is_file() and not target.exists()
        with pytest.raises(OutputBusy) as e:
            own_beside(target, "report dir", "--report-dir")
        assert str(e.value).startswith(f"report dir {target}: in use") and "another --report-dir" in str(
            e.value
        )
    finally:
        first.release()
    own_beside(target, "report dir", "--report-dir").release()


def test_a_place_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(Unwritable) as e:
        own_dir(tmp_path / "file" / "out", "sweep", "id")  # a file where a parent dir should be
    assert str(e.value).startswith("output_dir: cannot write") and "\n" not in str(e.value)


def test_a_read_only_file_system_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "open", read_only)  # root writes through chmod: fail the open itself
    with pytest.raises(Unwritable, match=r"^output_dir: cannot write .*\(Read-only file system\); choose"):
        own_dir(tmp_path / "out", "sweep", "id")


def test_sweep_run_into_a_place_it_cannot_write_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweep.cli import main

    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "out"
    assert main(["run", "examples/simulated.yaml", "--out", str(out), "--no-tracking"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    fix = "choose a directory you can write, or fix its permissions"
    assert err == [f"error: output_dir: cannot write {out} (Not a directory); {fix}"]


def test_sweep_run_into_a_training_dir_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sweep.cli import main

    (tmp_path / "train.resolved.yaml").write_text("name: t\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["run", "examples/simulated.yaml", "--out", str(tmp_path), "--no-tracking"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds a training, not a sweep's results" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_replace_file_is_whole_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "page.html"
    target.write_bytes(b"old")
    replace_file(target, b"new")
    assert target.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()  # as a plain write, not mkstemp's 0600

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as e:
        replace_file(target, b"newer")
    assert e.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]


def test_drivers_writing_the_resolved_config_at_once_never_collide(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from sweep.config.sweep import load_config
    from sweep.run.runner import write_resolved_config

    cfg = load_config("examples/simulated.yaml")  # an owner and its --join workers all write it
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: write_resolved_config(cfg, tmp_path), range(400)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.resolved.yaml"]


def test_a_dir_is_read_from_one_listing_so_a_study_starting_beside_it_never_reads_as_a_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A joining driver looks at the dir at the moment the owner marks it as a study and then writes
    # the sweep's config: the look must see neither or the mark, never the config alone.
    out = tmp_path / "out"
    out.mkdir()
    listdir = os.listdir

    def owner_writes_between(path: Any) -> list[str]:
        names = listdir(path)
        (out / "study.resolved.yaml").write_text("x")  # the owner's mark, then the base sweep's file
        (out / "config.resolved.yaml").write_text("x")
        return names

    monkeypatch.setattr(os, "listdir", owner_writes_between)
    assert dir_kind(out) is None  # what the listing saw: nothing yet
    monkeypatch.setattr(os, "listdir", listdir)
    assert dir_kind(out) == "study"
