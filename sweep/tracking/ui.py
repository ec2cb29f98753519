"""`sweep mlflow OUT`: the MLflow UI on an output dir's store (the `mlflow.db` of a sweep, study or
training), served by this environment's MLflow on 127.0.0.1 until Ctrl-C or SIGTERM, which stop the
server it started. Exit codes: 0 stopped by the user; 2 no store in OUT, or a bad or busy --port;
1 the server failed to start or died. Each error is one line naming the field and the fix."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from sweep.config.errors import ConfigError

DEFAULT_PORT = 5000
# MLflow's default server took 52 s to answer on a busy 2-core machine (4 workers and a job runner);
# one worker without jobs took 16 s on a quiet one. Allow for a busy one.
START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 15.0
PARENT_ROLES = ("sweep", "study", "training")  # debate_sweep.role of a parent (or lone) run
# + a key: an experiment tag holding a runs-page state, which the UI opens with ?viewStateShareKey=KEY
VIEW_TAG = "mlflow.sharedViewState."


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mlflow", help="open the MLflow UI on an output dir's runs (sweep, study or training)")
    p.add_argument("out", type=Path, help="output dir of a sweep, study or training (its mlflow.db)")
    p.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)",
    )


def store_uri(out: Path) -> str:
    """The sqlite URI of `out`'s MLflow store; ConfigError when `out` has none."""
    db = out.resolve() / "mlflow.db"
    if not out.is_dir():
        raise ConfigError(f"OUT: {out} is not a directory; give the output dir of a sweep, study or training")
    if not db.is_file():
        raise ConfigError(
            f"OUT: {out} has no MLflow store (mlflow.db); it was run with --no-tracking or logged to "
            "MLFLOW_TRACKING_URI: rerun without --no-tracking, or open that server"
        )
    return f"sqlite:///{db}"


def _shown(path: Path) -> str:
    """`path` as a user types it: relative to the current dir when inside it, else absolute."""
    path = Path(os.path.abspath(path))  # not resolve(): a venv's python is a link to the system's
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def sweep_command() -> str:
    """How to type this environment's `sweep` here: `sweep` when PATH finds this one, else its path."""
    script = Path(os.path.abspath(sys.executable)).parent / "sweep"
    if not script.is_file():  # run as `python -m sweep` from an environment without the script
        return f"{shlex.quote(_shown(Path(sys.executable)))} -m sweep"
    found = shutil.which("sweep")
    if found and os.path.abspath(found) == str(script):
        return "sweep"
    return shlex.quote(_shown(script))


def hint(tracking_uri: str, parent_run_id: str | None, out_dir: Path) -> str:
    """The line a finished command prints about MLflow: where it logged, and the exact command
    (or URL) that shows it, typed as it works from a fresh shell."""
    head = f"mlflow: {tracking_uri}" + (f" (parent run {parent_run_id})" if parent_run_id else "")
    if tracking_uri == f"sqlite:///{Path(out_dir).resolve() / 'mlflow.db'}":
        return f"{head}; view with: {sweep_command()} mlflow {shlex.quote(_shown(Path(out_dir)))}"
    if tracking_uri.startswith(("http://", "https://")):
        run = f"#/runs/{parent_run_id}" if parent_run_id else ""
        return f"{head}; open {tracking_uri.rstrip('/')}/{run}"
    python = shlex.quote(_shown(Path(sys.executable)))
    return (
        f"{head}; view with: {python} -m mlflow server --backend-store-uri {shlex.quote(tracking_uri)} "
        "--host 127.0.0.1 --workers 1"
    )


def server_command(uri: str, port: int, out: Path) -> list[str]:
    """This environment's MLflow server on `uri`, set to survive a busy small machine: one uvicorn
    worker (several only add start-up time and memory here, and their supervisor kills and restarts
    a worker that misses a 5 s health check under load), long keep-alive, artifacts read from the
    runs' own locations and never written to the current dir."""
    opts = {
        "--backend-store-uri": uri,
        "--host": "127.0.0.1",
        "--port": str(port),
        "--workers": "1",
        "--default-artifact-root": (out.resolve() / "mlartifacts").as_uri(),
        "--uvicorn-opts": "--timeout-keep-alive 60 --timeout-graceful-shutdown 5",
    }
    return [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        *(x for kv in opts.items() for x in kv),
        "--no-serve-artifacts",
    ]


def server_env() -> dict[str, str]:
    """The environment: no job runner (7 more processes, unused by a viewer), no telemetry."""
    return {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}


def pick_port(port: int) -> int:
    """`port` if 127.0.0.1 can listen on it (a free one for 0); ConfigError if not."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be from 0 to 65535 (0: any free port), got {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As uvicorn binds: a port whose last server closed moments ago (TIME_WAIT) is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise ConfigError(
                f"--port: cannot listen on 127.0.0.1:{port} ({e.strerror}); pick another --port, or --port 0"
            ) from None
        return int(s.getsockname()[1])


def _get(url: str, body: dict[str, Any] | None = None, timeout: float = 10.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read().decode()
    return text if body is None else json.loads(text)


def landing(base: str) -> tuple[str, str]:
    """(what, URL) to open: the newest sweep, study or training run's child runs (the view its
    sweep logged: flat, with metric columns) or else its run page; the UI's home without one."""
    api = f"{base}/api/2.0/mlflow"
    experiments = _get(f"{api}/experiments/search", {"max_results": 1000}).get("experiments", [])
    best: tuple[int, str, dict[str, Any]] | None = None
    for exp in experiments:
        found = _get(f"{api}/runs/search", {"experiment_ids": [exp["experiment_id"]], "max_results": 1000})
        for run in found.get("runs", []):
            tags = {t["key"]: t["value"] for t in run.get("data", {}).get("tags", [])}
            if tags.get("debate_sweep.role") in PARENT_ROLES and "mlflow.parentRunId" not in tags:
                start = int(run["info"].get("start_time", 0))
                if best is None or start > best[0]:
                    role = tags["debate_sweep.role"]
                    best = (
                        start,
                        exp["experiment_id"],
                        {**run["info"], "role": role, "exp_tags": exp.get("tags", [])},
                    )
    if best is None:
        return "MLflow", f"{base}/"
    _, exp_id, info = best
    run_id, what = info["run_id"], f"{info['role']} {info.get('run_name', '')!r}"
    if any(t["key"] == VIEW_TAG + run_id for t in info["exp_tags"]):
        return f"the runs of {what}", f"{base}/#/experiments/{exp_id}/runs?viewStateShareKey={run_id}"
    return what, f"{base}/#/experiments/{exp_id}/runs/{run_id}"


def _last_line(log: IO[bytes]) -> str:
    log.seek(0)
    lines = [line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _wait_ready(proc: subprocess.Popen[bytes], base: str, log: IO[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the MLflow server exited ({proc.returncode}) while starting: {_last_line(log)}"
            )
        try:
            if _get(f"{base}/health", timeout=5.0).strip() == "OK":
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the MLflow server did not answer in {START_TIMEOUT_S:.0f} s: {_last_line(log)}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server, started as the leader of its own process group: SIGTERM to the group, then
    SIGKILL if any of it is left after STOP_TIMEOUT_S; returns once the whole group is gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if _group_gone(proc, STOP_TIMEOUT_S):
            break
    proc.wait()


def _group_gone(proc: subprocess.Popen[bytes], wait: float) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader: a zombie would still count as a member
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt meanwhile, so both stop the server the same way."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run(args: argparse.Namespace) -> int:
    try:
        uri = store_uri(args.out)
        port = pick_port(args.port)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    base = f"http://127.0.0.1:{port}"
    print(
        f"sweep mlflow: starting MLflow on {base} for {args.out} (may take a minute on a busy machine)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="sweep-mlflow-") as cwd, tempfile.TemporaryFile() as log:
        proc = None
        with _sigterm_interrupts():
            try:
                proc = subprocess.Popen(
                    server_command(uri, port, args.out),
                    cwd=cwd,  # whatever the server writes there goes with the temporary dir
                    env=server_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: `stop` ends the server's children too
                )
                _wait_ready(proc, base, log)
                what, url = landing(base)
                print(f"sweep mlflow: {what}: {url}", flush=True)
                print(f"(server pid {proc.pid}; Ctrl-C stops it)", flush=True)
                code = proc.wait()
                print(f"error: the MLflow server stopped ({code}): {_last_line(log)}; rerun", file=sys.stderr)
                return 1
            except KeyboardInterrupt:
                return 0
            except (RuntimeError, OSError, ValueError) as e:
                print(f"error: {e}; rerun, or try another --port", file=sys.stderr)
                return 1
            finally:
                if proc is not None:
                    stop(proc)


def main(argv: list[str] | None = None) -> int:
    """`python -m sweep.tracking.ui OUT [--port N]`, as `sweep mlflow` runs it."""
    parser = argparse.ArgumentParser(prog="sweep")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(["mlflow", *(sys.argv[1:] if argv is None else argv)]))


if __name__ == "__main__":
    sys.exit(main())
