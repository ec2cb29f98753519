"""The command corpus as a test: every generated bad input to `sweep train`, `sweep report` and
`sweep view` (`tests/fuzz_commands`) runs in-process through `sweep.cli.main` and must end as the
house rules say: no exception escapes, the exit code wanted, stderr's last line one `error: ` line
naming the field or file (and a fix), every other stderr line a `warning: `, a refused target
byte-identical afterwards, nothing left behind by a refused command (lock files aside), and no hang.
An unreadable part the command can do without is skipped with a warning naming it (exit 0).

The cases share two real output dirs made once per module: a sweep (`sweep run`, simulated engine,
run twice so its tables hold two parts each) and a training (`sweep train`, one tiny update); a case
that needs one copies it into its own dir first."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sweep.cli
import sweep.view.cli
from tests.fuzz_cases import Case, dump
from tests.fuzz_commands import BASE, SWEEP, TRAIN, all_cases, tiny
from tests.test_config_fuzz import FIX_WORDS, accept, watchdog

CASES = all_cases()
HANG_S = 60  # a case taking this long is a hang (they take well under a second; a training, seconds)
# What says how to fix it: the config corpus's words, and the commands' own ("run the sweep first").
FIXES = (*FIX_WORDS, "run the ")


class Sandboxed(BaseException):
    """A write outside the case's dir, stopped before it happened (a BaseException, so no `except
    Exception` of the command turns it into an error line that would pass for a refusal)."""


class Sandbox:
    """While a case runs, an audit hook (`sys.addaudithook`) stops every write, rename, removal or
    mkdir outside the case's dir, the temp dirs and caches libraries make, and `__pycache__`: a bad
    target wrongly accepted (`--report-dir /etc`, `--export /dev/null`) must not harm the machine."""

    EVENTS = {
        "open",
        "os.rename",
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "shutil.rmtree",
        "os.symlink",
        "os.link",
        "os.truncate",
    }
    _WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def __init__(self) -> None:
        self.root: str | None = None
        self.stopped: list[str] = []
        home = os.path.realpath(os.path.expanduser("~"))
        self.caches = tuple(os.path.join(home, d) + os.sep for d in (".cache", ".config", ".local"))
        self.tmp = os.path.realpath(tempfile.gettempdir())
        sys.addaudithook(self._hook)

    def allowed(self, path: str, follow: bool) -> bool:
        if self.root is not None and (path == self.root or path.startswith(self.root + os.sep)):
            return True
        if path.startswith(self.caches) or f"{os.sep}__pycache__{os.sep}" in path:
            return True
        if follow and path == os.devnull:  # writing into it, never replacing or removing it
            return True
        parent, name = os.path.split(path)
        return parent == self.tmp and name.startswith(("tmp", "matplotlib-"))  # tempfile's own names

    def _check(self, path: object, follow: bool) -> None:
        """Stop a write to `path` outside the allowed places; `follow`: the write goes through a link
        (opening a file) rather than replacing the entry itself (rename, removal, mkdir)."""
        if isinstance(path, int) or path is None:
            return
        text = os.fsdecode(path) if isinstance(path, bytes | os.PathLike) else str(path)
        if "\x00" in text:
            return  # the OS refuses it itself
        full = os.path.abspath(text)
        real = (
            os.path.realpath(full)
            if follow
            else os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
        )
        if not self.allowed(real, follow):
            self.stopped.append(real)
            raise Sandboxed(f"stopped a write outside the case dir: {real}")

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.root is None or event not in self.EVENTS:
            return
        if event == "open":
            path, mode, flags = args
            writes = (
                any(c in mode for c in "wax+")
                if isinstance(mode, str)
                else bool((flags or 0) & self._WRITE_FLAGS)
            )
            if writes:
                self._check(path, follow=True)
        elif event in ("os.rename", "os.symlink", "os.link"):
            if event == "os.rename":
                self._check(args[0], follow=False)
            self._check(args[1], follow=False)
        elif event == "os.truncate":  # (path or fd, length)
            self._check(args[0], follow=True)
        else:  # (path, ..., dir_fd): a path relative to a dir fd is inside a tree checked at its top
            relative = args[-1] is not None and not os.path.isabs(os.fsdecode(args[0]))
            if not relative:
                self._check(args[0], follow=False)

    @contextlib.contextmanager
    def around(self, root: Path) -> Iterator[list[str]]:
        self.root, self.stopped = os.path.realpath(root), []
        try:
            yield self.stopped
        finally:
            self.root = None


SANDBOX: Sandbox | None = None


def sandbox() -> Sandbox:
    global SANDBOX
    if SANDBOX is None:
        SANDBOX = Sandbox()
    return SANDBOX


def _outcome_of(argv: list[str]) -> object:
    """The exit code of `sweep.cli.main(argv)`, or what went wrong instead (a string)."""
    try:
        with watchdog(HANG_S):
            return sweep.cli.main(argv)
    except SystemExit as e:  # argparse's usage errors
        return e.code
    except TimeoutError as e:
        return f"hang: {e}"
    except BaseException as e:  # noqa: BLE001 - whatever escapes is the finding
        return f"raised {type(e).__name__}: {str(e)[:200]}"


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A real sweep output dir (two parts in each table) and a real training output dir (one update)."""
    root = tmp_path_factory.mktemp("command-fuzz")
    saved = {k: os.environ.pop(k) for k in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS") if k in os.environ}
    try:
        (root / "sweep.yaml").write_text(dump(SWEEP))
        for limit in ("2", "3"):  # a rerun with more items appends a second part to each table
            code = _outcome_of(
                [
                    "run",
                    str(root / "sweep.yaml"),
                    "--out",
                    str(root / "sweep"),
                    "--no-tracking",
                    "--limit",
                    limit,
                ]
            )
            assert code == 0, f"the fixture sweep did not run: {code}"
        (root / "base.yaml").write_text(dump(BASE))
        (root / "train.yaml").write_text(dump({**TRAIN, "output_dir": str(root / "train")}))
        code = _outcome_of(["train", str(root / "train.yaml"), *tiny()])
        assert code == 0, f"the fixture training did not run: {code}"
        yield {"sweep": root / "sweep", "train": root / "train"}
    finally:
        os.environ.update(saved)


def fill(text: str, subs: dict[str, str]) -> str:
    for key, value in subs.items():
        text = text.replace("{" + key + "}", value)
    return text


def materialise(case: Case, tmp: Path, fixtures: dict[str, Path]) -> dict[str, str]:
    """Write the case's files and run its preparation steps; the placeholders they define."""
    subs = {"tmp": str(tmp)}
    for name, content in case.files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(fill(content, subs), encoding="utf-8")
        else:
            path.write_bytes(content)
    for step in case.extra.get("prepare", []):
        subs |= step(tmp, fixtures)
    return subs


def digest(path: Path) -> str | None:
    """A hash of what is at `path`, not following links: names, kinds, link targets, file bytes."""
    if not os.path.lexists(path):
        return None
    h = hashlib.sha256()
    items = [path] + (sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink() else [])
    for p in items:
        mode = p.lstat().st_mode
        h.update(str(p.relative_to(path)).encode() + b"|" + stat.filemode(mode).encode()[:1] + b"|")
        if stat.S_ISLNK(mode):
            h.update(os.readlink(p).encode())
        elif stat.S_ISREG(mode):
            h.update(p.read_bytes())
    return h.hexdigest()


def snapshot(root: Path) -> set[tuple[str, int, int]]:
    """Every file and link under `root` (size, mtime), lock files aside: a refused command may have
    taken a lock, and must have written nothing else."""
    found = set()
    for p in root.rglob("*"):
        st = p.lstat()
        if not p.name.endswith(".lock") and not stat.S_ISDIR(st.st_mode):
            found.add((str(p.relative_to(root)), st.st_size, st.st_mtime_ns))
    return found


def problem(
    case: Case, code: object, out: str, err: str, subs: dict[str, str], changed: list[str]
) -> str | None:
    """What is wrong with how the command answered the case, or None."""
    want = case.extra.get("code", 2)
    wanted = want if isinstance(want, tuple) else (want,)
    lines = [line for line in err.splitlines() if line.strip()]
    if any(c.startswith("tried to write") for c in changed):
        return f"{', '.join(changed)} (exit {code})"
    if "Traceback" in err or "Traceback" in out:
        return f"traceback: {err.strip()[-300:]!r}"
    if not isinstance(code, int):
        return str(code)
    if code not in wanted:
        what = "accepted" if code == 0 else f"exit {code}"
        return f"{what} (want {' or '.join(map(str, wanted))}): {(lines or [''])[-1][:300]!r}"
    warn = fill(case.extra.get("warn", ""), subs)
    warned = any(line.startswith("warning: ") and warn in line for line in lines)
    if warn and (code == 0 or not isinstance(want, tuple)) and not warned:
        return f"no warning naming {warn!r}: {err.strip()[-300:]!r}"
    if code != 0:
        if not lines or not lines[-1].startswith("error: "):
            return f"last stderr line is not an error line: {err.strip()[-300:]!r}"
        strays = [line for line in lines[:-1] if not line.startswith("warning: ")]
        if strays:
            return f"more than one error line: {err.strip()[-300:]!r}"
        for fragment in [case.expect, *case.extra.get("also", [])]:
            if fill(fragment, subs) not in lines[-1]:
                return f"does not name {fill(fragment, subs)!r}: {lines[-1][:300]}"
        if not any(w in lines[-1] for w in FIXES):
            return f"says no fix: {lines[-1][:300]}"
    if changed:
        return f"changed {', '.join(changed)}"
    writes = case.extra.get("writes")
    if code == 0 and writes and not Path(fill(writes, subs)).is_file():
        return f"did not write {fill(writes, subs)}"
    return None


def test_the_corpus_is_large_named_uniquely_and_covers_each_command() -> None:
    assert len(CASES) >= 150
    assert len({c.name for c in CASES}) == len(CASES)
    commands = {c.argv[0] for c in CASES}
    assert {"train", "report", "view", "validate", "run"} <= commands
    assert sum("--validate" not in c.argv for c in CASES if c.argv[0] == "train") >= 50
    assert all(c.argv[0] != "view" or "--export" in c.argv for c in CASES)  # never serves


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_bad_input_is_one_line_and_touches_nothing(
    case: Case,
    tmp_path: Path,
    fixtures: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(sweep.view.cli, "_serve", accept)  # a view that would serve instead of export
    monkeypatch.chdir(tmp_path)  # relative config paths; the corpus's "." is this dir
    subs = materialise(case, tmp_path, fixtures)
    argv = [fill(a, subs) for a in case.argv]
    targets = [Path(fill(t, subs)) for t in case.extra.get("targets", [])]
    before, kept = snapshot(tmp_path), {t: digest(t) for t in targets}
    capsys.readouterr()
    with sandbox().around(tmp_path) as stopped:
        code = _outcome_of(argv)
    out, err = capsys.readouterr()
    changed = [str(t) for t in targets if digest(t) != kept[t]] + [f"tried to write {p}" for p in stopped[:3]]
    if isinstance(code, int) and code != 0 and snapshot(tmp_path) != before:
        new = sorted({p for p, *_ in snapshot(tmp_path) ^ before})
        changed.append(f"wrote {', '.join(new[:5])}")
    why = problem(case, code, out, err, subs, changed)
    assert why is None, f"{case.name}: {why}"


def test_the_harness_catches_what_it_should(tmp_path: Path) -> None:
    """The checks themselves: a traceback, a wrong exit, two lines, an unnamed field, a changed target."""
    c = Case("x", {}, ["train"], "ppo.lr", {"targets": ["{tmp}/t"]})
    subs = {"tmp": str(tmp_path)}
    good = "error: ppo.lr: must be finite; give a number such as 0.5\n"
    assert problem(c, 2, "", good, subs, []) is None
    assert problem(c, "raised KeyError: 'x'", "", "", subs, []) == "raised KeyError: 'x'"
    assert "traceback" in str(problem(c, 1, "", "Traceback (most recent call last):\n", subs, []))
    assert "accepted" in str(problem(c, 0, "", "", subs, []))
    assert "more than one" in str(problem(c, 2, "", "engine up\n" + good, subs, []))
    assert "does not name" in str(problem(c, 2, "", "error: lr: bad; fix it\n", subs, []))
    assert "changed" in str(problem(c, 2, "", good, subs, ["t"]))


def test_the_sandbox_stops_writes_outside_the_case_dir(tmp_path: Path) -> None:
    """Each way a command writes, aimed outside the case dir, is stopped before it happens; inside, allowed."""
    case_dir, outside = (
        tmp_path / "case",
        Path(__file__).resolve().parents[1] / f".sandbox-probe-{os.getpid()}",
    )
    case_dir.mkdir()
    outside.mkdir()
    (outside / "kept.txt").write_text("x")
    (case_dir / "a.txt").write_text("a")
    (case_dir / "l").symlink_to(outside)  # a write through a link leaves the case dir
    attempts = {
        "open": lambda: open(outside / "new.txt", "w"),  # noqa: SIM115
        "os.open": lambda: os.open(outside / "new.txt", os.O_WRONLY | os.O_CREAT),
        "rename": lambda: os.replace(case_dir / "a.txt", outside / "kept.txt"),
        "remove": lambda: (outside / "kept.txt").unlink(),
        "mkdir": lambda: (outside / "sub").mkdir(),
        "rmtree": lambda: shutil.rmtree(outside),
        "link into": lambda: open(case_dir / "l" / "new.txt", "w"),  # noqa: SIM115
    }
    try:
        with sandbox().around(case_dir) as stopped:
            for what, attempt in attempts.items():
                with pytest.raises(Sandboxed):
                    attempt()
                assert stopped, what
            (case_dir / "b.txt").write_text("inside")  # the case's own dir stays writable
            os.replace(case_dir / "b.txt", case_dir / "c.txt")
        assert sorted(p.name for p in outside.iterdir()) == ["kept.txt"]
        assert (outside / "kept.txt").read_text() == "x" and (case_dir / "a.txt").read_text() == "a"
        open(outside / "after.txt", "w").close()  # inactive once the case is over  # noqa: SIM115
    finally:
        shutil.rmtree(outside)
