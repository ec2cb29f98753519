"""Places a config names: what is refused (empty, system trees, the current dir and above, someone
else's files, a storage file of the wrong kind) and what is not (new dirs, results dirs, a dir holding
only its configs)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sweep.config.errors import ConfigError
from sweep.config.paths import file_url, input_path, output_dir

SIMULATED = str(Path(__file__).resolve().parents[1] / "examples" / "simulated.yaml")


def test_output_dirs_that_are_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert output_dir("runs/new") == tmp_path / "runs" / "new"  # resolved against the current dir
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "sweep.yaml").write_text("name: x\n")
    (tmp_path / "exp" / ".gitignore").write_text("*\n")
    assert output_dir("exp") == tmp_path / "exp"  # its config and hidden files only
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "episodes").mkdir()
    (tmp_path / "old" / "notes.txt").write_text("mine")
    assert output_dir(str(tmp_path / "old")) == tmp_path / "old"  # results already there


@pytest.mark.parametrize(
    "value,fragment",
    [("", "empty path"), ("/", "a system location"), ("/etc/x", "a system location"), (".", "the current directory"),
     ("..", "above it"), ("src", "already holds other files (e.g. 'code.py')"), ("afile", "is a file")],
)  # fmt: skip
def test_output_dirs_that_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, fragment: str
) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "code.py").write_text("print()\n")
    (work / "afile").write_text("x")
    monkeypatch.chdir(work)
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as e:
        output_dir(value)
    assert str(e.value).startswith("output_dir: ")


def test_an_output_dir_that_cannot_be_looked_at_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A parent the user may not search (stat raises PermissionError as a non-root user) and a name
    too long for the file system: one `error: output_dir: ...` line and exit 2, no traceback."""
    from sweep.cli import main

    locked = tmp_path / "locked"
    real_stat = Path.stat

    def stat(self: Path, *a: object, **k: object) -> object:
        if self == locked / "out":
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "stat", stat)
    long = str(tmp_path / ("x" * 300) / "out")
    for value, why in ((str(locked / "out"), "Permission denied"), (long, "File name too long")):
        code = main(["run", SIMULATED, "--no-tracking", "--limit", "1", "--out", value])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith("error: output_dir: cannot write ") and why in err
        assert "fix its permissions" in err


def test_storage_and_tracking_urls(tmp_path: Path) -> None:
    assert file_url("http://127.0.0.1:5000", "tracking.uri") == "http://127.0.0.1:5000"
    assert file_url("postgresql://u@db/x", "storage") == "postgresql://u@db/x"
    file_url(f"sqlite:///{tmp_path}/new.db", "storage")
    db = tmp_path / "real.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    file_url(f"sqlite:///{db}", "storage")
    (tmp_path / "notes.txt").write_text("hello")
    for url, fragment in [
        ("journal:/etc/passwd", "a system location"),
        ("sqlite:////etc/x.db", "a system location"),
        (f"sqlite:///{tmp_path}/notes.txt", "is not an sqlite database"),
        (f"journal:{tmp_path}/notes.txt", "is not an Optuna journal"),
        (f"journal:{tmp_path}", "is not a regular file"),
        ("journal:", "empty path"),
        ("", "empty"),
        ("nourl", "is not a URL"),
    ]:
        with pytest.raises(ConfigError, match=fragment):
            file_url(url, "storage")


def test_input_paths(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text("{}\n")
    assert input_path(str(tmp_path / "data.jsonl"), "datasets[0].path") == tmp_path / "data.jsonl"
    for value, fragment in [
        ("/dev/zero", "system path"),
        (str(tmp_path / "none"), "not found"),
        ("", "empty path"),
    ]:
        with pytest.raises(ConfigError, match=fragment):
            input_path(value, "datasets[0].path")
