"""The README's one-machine `ray job submit` block, run as text by bash — as a user who did not
activate the venv types it — while another Ray-like process holds Ray's default ports: `sweep cluster
up` starts a head, the job submits and succeeds, its driver attached to that head, and `sweep cluster
down` leaves none of the head's processes behind.

SWEEP_README names another README to read the block from (to try a block before it is pasted)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.cluster import cli as cluster_cmd
from sweep.cluster.cli import read_state
from sweep.cluster.head import processes, stop
from sweep.store.results import ResultStore
from sweep.store.targets import own_beside
from tests.conftest import ROOT

OPEN, CLOSE = "<!-- one-machine-job -->", "<!-- /one-machine-job -->"
# Ray's defaults for the GCS, the dashboard, its agent, the client server and two metrics servers.
DEFAULT_PORTS = (6379, 8265, 52365, 10001, 44217, 44227)


def readme_block(readme: Path) -> str:
    """The bash block between the README's one-machine-job markers, as written there."""
    text = readme.read_text()
    assert text.count(OPEN) == 1 and text.count(CLOSE) == 1, f"{readme}: one {OPEN} ... {CLOSE} pair"
    found = re.findall(r"```bash\n(.*?)```", text.split(OPEN, 1)[1].split(CLOSE, 1)[0], flags=re.S)
    assert len(found) == 1, f"{readme}: one ```bash block between the markers"
    return found[0]


@contextlib.contextmanager
def default_ports_held() -> Iterator[list[int]]:
    """Listen on each of Ray's default ports that is free (one already taken is held anyway)."""
    with contextlib.ExitStack() as stack:
        held = []
        for port in DEFAULT_PORTS:
            s = stack.enter_context(socket.socket())
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            s.listen()
            held.append(port)
        yield held


def fresh_shell(home: Path) -> dict[str, str]:
    """A new user's environment: the venv off PATH, no Ray settings, `home` as HOME."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d != venv_bin)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "VIRTUAL_ENV", "SWEEP_"))}
    return keep | {"PATH": path, "HOME": str(home)}


def bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.ray
def test_the_readmes_one_machine_block_submits_a_job_that_succeeds_on_its_own_head(tmp_path: Path) -> None:
    block = readme_block(Path(os.environ.get("SWEEP_README", ROOT / "README.md")))
    assert block.count('"$PWD/runs/job"') == 1, block
    out = tmp_path / "job"
    lines = block.replace('"$PWD/runs/job"', shlex.quote(str(out))).splitlines()
    down = [i for i, ln in enumerate(lines) if re.search(r"\bcluster down\b", ln)]
    assert len(down) == 1 and down[0] == len(lines) - 1, "the block ends with `sweep cluster down`"
    home = tmp_path / "home"
    home.mkdir()
    where = home / ".cache" / "debate-sweep" / "cluster"
    env = fresh_shell(home)
    temp_dir = ""
    with default_ports_held():
        try:
            # Up to the last line, then the head's record of the job, then `sweep cluster down`.
            first = bash("\n".join(lines[:-1]), env)
            state = read_state(where)
            temp_dir = state["temp_dir"] if state else ""
            assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
            assert re.search(r"Job 'job-[\w-]+' succeeded", first.stdout + first.stderr), first.stdout[-3000:]
            assert state is not None and state["ports"]["dashboard-port"] != 8265
            assert ResultStore(out).episodes().height == 5 * 4 * 2  # five methods x --limit 4 x two seeds
            assert (out / "mlflow.db").is_file()
            assert_the_driver_attached(state)
            last = bash(lines[-1], env)
            assert last.returncode == 0, last.stdout + last.stderr
        finally:
            for started in heads_under(home):  # a failed run leaves nothing behind either
                stop(started)
    assert temp_dir and leftovers(temp_dir) == [], "sweep cluster down left processes of the head"
    assert not Path(temp_dir).exists() and read_state(where) is None


def heads_under(home: Path) -> set[str]:
    """The temp dirs of the heads still running that a `sweep cluster up` with this HOME started."""
    found = set()
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            env = (entry / "environ").read_bytes().split(b"\0") if entry.name.isdigit() else []
            marks = [v.split(b"=", 1)[1].decode() for v in env if v.startswith(b"SWEEP_CLUSTER_DIR=")]
            if marks and f"HOME={home}".encode() in env:
                found.add(marks[0])
    return found


def leftovers(temp_dir: str) -> list[str]:
    """Live processes that name the head's temp dir on their command line or in their environment
    (read here rather than through the code under test)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if not entry.name.isdigit() or (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            text = (entry / "cmdline").read_bytes() + b"\0" + (entry / "environ").read_bytes()
            if temp_dir.encode() in text:
                found.append(f"{entry.name} {(entry / 'comm').read_text().strip()}")
    return found


def assert_the_driver_attached(state: dict[str, object]) -> None:
    """The job's driver registered with this head: a driver that ignored the RAY_ADDRESS the job
    gets and started a Ray of its own would leave the head's record of the job driverless."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    ports, token = state["ports"], Path(str(state["token"])).read_text().strip()
    assert isinstance(ports, dict)
    client = JobSubmissionClient(
        f"http://127.0.0.1:{ports['dashboard-port']}", headers={"Authorization": f"Bearer {token}"}
    )
    (job,) = client.list_jobs()
    assert job.status == JobStatus.SUCCEEDED, job
    assert job.driver_info is not None and job.job_id is not None, job


def cluster(*argv: str) -> int:
    """`sweep cluster ARGV` through the module's own parser and `run`."""
    parser = argparse.ArgumentParser(prog="sweep")
    cluster_cmd.add_parser(parser.add_subparsers(dest="command", required=True))
    return cluster_cmd.run(parser.parse_args(["cluster", *argv]))


def test_status_and_down_without_a_live_head(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = str(tmp_path / "c")
    assert cluster("status", "--dir", where) == 1
    assert "not up (no head recorded" in capsys.readouterr().out
    assert cluster("down", "--dir", where) == 0
    assert "nothing to stop" in capsys.readouterr().out
    # A head recorded but gone (a reboot): not up; `down` clears the record.
    (tmp_path / "c" / "cluster.json").write_text(json.dumps({"temp_dir": "/tmp/ray/sweep-cluster-gone"}))
    assert cluster("status", "--dir", where) == 1
    assert "has stopped" in capsys.readouterr().out
    assert cluster("down", "--dir", where) == 0
    assert not (tmp_path / "c" / "cluster.json").exists()


@pytest.mark.parametrize("action", ["up", "down", "status"])
def test_a_bad_dir_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    (tmp_path / "f").write_text("x")
    for bad in (str(tmp_path / "f"), "/etc/sweep-cluster", ""):
        assert cluster(action, "--dir", bad) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --dir: ") and err.count("\n") == 1, err


def test_up_on_a_dir_another_up_holds_is_refused_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = tmp_path / "c"
    lock = own_beside(where / "cluster.json", "sweep cluster", "--dir")
    try:
        assert cluster("up", "--dir", str(where)) == 2
    finally:
        lock.release()
    err = capsys.readouterr().err
    assert err.startswith("error: sweep cluster") and "in use" in err and err.count("\n") == 1, err
    assert not (where / "auth_token").exists() and not (where / "cluster.json").exists()


def test_only_a_temp_dir_of_its_own_names_processes_to_stop() -> None:
    # The checkout's path is on many command lines (this test run's, others'): never a head's.
    assert processes(str(ROOT)) == [] and processes("/tmp") == []
