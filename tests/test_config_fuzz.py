"""The fuzz corpus as a test: over a thousand generated bad configs and search spaces (`tests/fuzz_cases`)
each end in exit 2 with one line naming the field (and what to do), write nothing, and never hang.
Most run in-process through `sweep.cli.main` (`run`, stopped at the first step after validation
should a bad config get through); a sample runs through the real CLI in a subprocess."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sweep.cli
import sweep.run.cli
import sweep.study.cli
from tests.conftest import ROOT, sweep_cmd
from tests.fuzz_cases import Case, all_cases

CASES = all_cases()
HANG_S = 30  # a case taking this long is a hang (they take milliseconds); no speed is asserted
# What says how to fix it, beyond naming the field: every error line holds one of these.
FIX_WORDS = (";", "did you mean", " must be ", "expected", "give ", "known:", "remove", "rerun", "use ")


class Accepted(Exception):
    """A bad config got past validation (raised where the run's first step after it would start)."""


def accept(*args: Any, **kwargs: Any) -> None:
    raise Accepted


def materialise(case: Case, tmp: Path) -> list[str]:
    """Write the case's files (plus a plain file and a foreign dir it may point at); its argv."""
    (tmp / "afile").write_text("not a config\n")
    (tmp / "foreign").mkdir(exist_ok=True)
    (tmp / "foreign" / "notes.txt").write_text("someone else's\n")
    for name, content in case.files.items():
        if isinstance(content, str):
            (tmp / name).write_text(content.replace("{tmp}", str(tmp)), encoding="utf-8")
        else:
            (tmp / name).write_bytes(content)
    return [a.replace("{tmp}", str(tmp)) for a in case.argv]


def snapshot(root: Path) -> set[tuple[str, int, int]]:
    return {(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@contextlib.contextmanager
def watchdog(seconds: int) -> Iterator[None]:
    def hang(signum: int, frame: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def problem(case: Case, code: object, err: str, changed: bool) -> str | None:
    """What is wrong with how a bad config was answered, or None."""
    lines = err.strip().splitlines()
    if code != 2:
        return f"exit {code}: {err.strip()[-300:]}"
    if len(lines) != 1 or not lines[0].startswith("error: ") or "Traceback" in err:
        return f"not one error line: {err.strip()[-300:]!r}"
    for fragment in (case.expect, case.extra.get("also", "")):
        if fragment not in lines[0]:
            return f"does not name {fragment!r}: {lines[0]}"
    if not any(w in lines[0] for w in FIX_WORDS):
        return f"says no fix: {lines[0]}"
    if changed:
        return "wrote files"
    return None


def run_in_process(case: Case, tmp: Path) -> tuple[object, str, bool]:
    argv = materialise(case, tmp)
    if argv[0] == "validate":
        argv = ["run", *argv[1:]]  # the command that would write; validation must refuse first
    before = snapshot(tmp)
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        with watchdog(HANG_S), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code: object = sweep.cli.main(argv)
    except Accepted:
        code = "accepted (validation let it through)"
    except TimeoutError as e:
        code = f"hang: {e}"
    except BaseException as e:  # noqa: BLE001 - whatever escapes is the finding
        code = f"raised {type(e).__name__}: {str(e)[:200]}"
    finally:
        os.chdir(cwd)
    return code, err.getvalue(), snapshot(tmp) != before


def test_the_corpus_is_large_and_named_uniquely() -> None:
    assert len(CASES) >= 1000
    assert len({c.name for c in CASES}) == len(CASES)


def test_every_bad_config_exits_2_in_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep.run.cli, "preflight", accept)
    monkeypatch.setattr(sweep.study.cli, "preflight", accept)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    failures = []
    for i, case in enumerate(CASES):
        tmp = tmp_path / f"c{i}"
        tmp.mkdir()
        code, err, changed = run_in_process(case, tmp)
        if (why := problem(case, code, err, changed)) is not None:
            failures.append(f"{case.name}: {why}")
    assert not failures, f"{len(failures)} of {len(CASES)} bad configs mishandled:\n" + "\n".join(
        failures[:40]
    )


SAMPLE = CASES[:: len(CASES) // 10][:10]


@pytest.mark.slow
@pytest.mark.parametrize("case", SAMPLE, ids=[c.name for c in SAMPLE])
def test_a_sample_through_the_cli(tmp_path: Path, case: Case) -> None:
    argv = materialise(case, tmp_path)
    if argv[0] == "validate":
        argv = ["run", *argv[1:]]
    # Were a bad config let through, the run would stop at this dead address (exit 1), not start Ray.
    argv += ["--address", "127.0.0.1:9"]
    before = snapshot(tmp_path)
    proc = subprocess.run(
        sweep_cmd(*argv), cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    why = problem(case, proc.returncode, proc.stderr, snapshot(tmp_path) != before)
    assert why is None, f"{case.name}: {why}"
    assert sys.executable  # the same interpreter as the in-process run
