"""`sweep study --best PATH` writes only where nothing of the user's is: an absent file or an earlier
`--best` file; a user's file, a dir or a system place is refused in one line and left as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from search_spaces import sample
from sweep.cli import main
from sweep.store.targets import own_beside
from sweep.study.best import HEADER
from sweep.study.storage import StudyLock, open_study
from tests.test_study_trials import setup_for, write_study


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """A study config whose storage holds one completed trial."""
    path = write_study(tmp_path)
    setup = setup_for(path, 1, tmp_path / "out")
    lock = StudyLock(setup.out / ".t.lock")
    stored = open_study(setup, lock)
    with lock:
        trial = stored.ask()
    stored.tell(trial, sample(setup.space, trial)["alpha_t"])
    return path


def best(study: Path, dest: Path | str) -> int:
    return main(["study", str(study), "--out", str(study.parent / "out"), "--best", str(dest)])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_absent_file_is_written_and_an_earlier_one_replaced(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = study.parent / "new" / "best.yaml"
    assert best(study, dest) == 0
    text = dest.read_text()
    assert text.startswith(HEADER) and yaml.safe_load(text)["methods"]
    dest.write_text(text + "# an earlier one\n")
    assert best(study, dest) == 0 and dest.read_text() == text
    assert [p.name for p in dest.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("content", ["my notes\n", "", "# best params\n"])
def test_a_users_file_is_refused_and_left_byte_identical(
    study: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    dest = study.parent / "notes.yaml"
    dest.write_text(content)
    before = digest(dest)
    assert best(study, dest) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"error: --best: {dest} exists and is not an earlier --best file"
    )
    assert digest(dest) == before


@pytest.mark.parametrize("dest", ["/etc/best.yaml", "dir", "nul\x00.yaml"])
def test_a_dir_a_system_place_or_a_nul_is_refused(
    study: Path, capsys: pytest.CaptureFixture[str], dest: str
) -> None:
    (study.parent / "dir").mkdir()
    target = study.parent / dest if dest == "dir" else dest
    assert best(study, target) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --best: ")


def test_a_second_writer_is_refused(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = study.parent / "best.yaml"
    held = own_beside(dest, "--best file", "--best")
    try:
        assert best(study, dest) == 2
    finally:
        held.release()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "in use by another driver" in err[0] and not dest.exists()
