"""`sweep cluster up|down|status`: a private Ray head on this machine that `ray job submit` reaches
as typed. `up` starts it (token auth with a token of its own, 127.0.0.1 only, a free port for every
Ray process), writes its state, its token and the shell exports to --dir (default
~/.cache/debate-sweep/cluster) and prints the exact lines to type; `down` stops exactly the processes
of that head, by PID, never another Ray on the machine (`ray stop` would stop every Ray of the user);
`status` says whether it is up.

Exit codes: 0 success (`status`: up); 1 `status` found it not up, or the head failed to start or
stop; 2 a bad --dir, or another `sweep cluster` busy on the same --dir; 130 interrupted (a head cut
short while starting is stopped). Each error is one line."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_DIR = "~/.cache/debate-sweep/cluster"
STATE, ENV, TOKEN = "cluster.json", "env.sh", "auth_token"
ROOT = Path(__file__).resolve().parents[1]  # the checkout, when run from one (examples/ beside sweep/)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "cluster", help="a private Ray head on this machine for `ray job submit` (up, down, status)"
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="{up,down,status}")
    for name, help in (
        ("up", "start a head (token auth, free ports, 127.0.0.1) and print the lines to submit a job"),
        ("down", "stop exactly the head `up` started"),
        ("status", "say whether the head is up (exit 0) or not (exit 1)"),
    ):
        a = actions.add_parser(name, help=help, description=help)
        a.add_argument(
            "--dir", default=DEFAULT_DIR, help=f"where its state, token and env.sh live ({DEFAULT_DIR})"
        )
        if name == "up":
            a.add_argument("--num-cpus", type=int, metavar="N", help="CPUs the head offers (default: all)")


def run(args: argparse.Namespace) -> int:
    from sweep.cluster.head import StartFailed
    from sweep.config.errors import ConfigError
    from sweep.config.paths import place

    try:
        where = place(args.dir, "--dir", f"a directory such as {DEFAULT_DIR}")
        if where.exists() and not where.is_dir():
            raise ConfigError(f"--dir: {where} is a file; give a directory such as {DEFAULT_DIR}")
        if args.action == "status":
            return _status(where)
        if args.action == "up" and args.num_cpus is not None and args.num_cpus < 1:
            raise ConfigError(
                f"--num-cpus: {args.num_cpus} is not a positive whole number; e.g. --num-cpus 2"
            )
        return _locked(where, args)
    except ConfigError as e:
        return _fail(str(e), 2)
    except StartFailed as e:
        return _fail(f"sweep cluster {args.action}: {e}", 1)
    except KeyboardInterrupt:
        return _fail(f"sweep cluster {args.action}: interrupted; `sweep cluster status` says what is up", 130)


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _locked(where: Path, args: argparse.Namespace) -> int:
    """`up` or `down` while holding the dir's lock: two of them at once would start two heads."""
    from sweep.store.targets import own_beside, unwritable

    lock = own_beside(where / STATE, "sweep cluster", "--dir")
    try:
        if args.action == "down":
            return _down(where)
        return _up(where, args.num_cpus)
    except OSError as e:  # writing the state, token or env file
        raise unwritable(where, e, "--dir") from None
    finally:
        lock.release()


def read_state(where: Path) -> dict[str, Any] | None:
    """The state `up` wrote, or None (none, or unreadable: then nothing of it can be trusted)."""
    try:
        state = json.loads((where / STATE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("temp_dir"), str) else None


def _up(where: Path, num_cpus: int | None) -> int:
    from sweep.cluster.head import alive, new_token, processes, start_head, stop
    from sweep.store.targets import replace_file

    state = read_state(where)
    if state is not None and alive(state["temp_dir"]):
        print(f"sweep cluster: already up since {state.get('since', '?')}")
        print(_lines(where, state))
        return 0
    if state is not None:  # a head that died (a reboot, a kill): clear what is left of it first
        stop(state["temp_dir"])
    where.mkdir(parents=True, exist_ok=True)
    token = new_token(where / TOKEN)
    state = start_head(token, num_cpus)
    try:
        state |= {"pids": processes(state["temp_dir"]), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        replace_file(where / ENV, _exports(where, state).encode())
        replace_file(where / STATE, (json.dumps(state, indent=1) + "\n").encode())
    except BaseException:  # unwritable, Ctrl-C: no head without a record of it (`down` finds none)
        stop(state["temp_dir"])
        (where / ENV).unlink(missing_ok=True)
        raise
    print(f"sweep cluster: a Ray head is up on 127.0.0.1 ({len(state['pids'])} processes, token auth on)")
    print(_lines(where, state))
    return 0


def _down(where: Path) -> int:
    from sweep.cluster.head import stop

    state = read_state(where)
    if state is None:
        print(f"sweep cluster: nothing to stop (no head recorded in {where / STATE})")
        return 0
    n = stop(state["temp_dir"])
    for name in (ENV, STATE):
        (where / name).unlink(missing_ok=True)
    print(f"sweep cluster: stopped the head at {_dashboard(state)} ({n} processes)")
    print(
        "  in a shell that sourced its env.sh: unset RAY_API_SERVER_ADDRESS RAY_AUTH_MODE RAY_AUTH_TOKEN_PATH"
    )
    return 0


def _status(where: Path) -> int:
    from sweep.cluster.head import alive

    state = read_state(where)
    if state is None:
        print(
            f"sweep cluster: not up (no head recorded in {where / STATE}); start one with: sweep cluster up"
        )
        return 1
    if not alive(state["temp_dir"]):
        print(f"sweep cluster: not up (the head recorded in {where / STATE} has stopped); sweep cluster up")
        return 1
    print(f"sweep cluster: up since {state.get('since', '?')}")
    print(_lines(where, state))
    return 0


def _dashboard(state: dict[str, Any]) -> str:
    ports = state.get("ports")
    port = ports.get("dashboard-port") if isinstance(ports, dict) else None
    return f"http://127.0.0.1:{port}" if isinstance(port, int) else "an address not recorded"


def _exports(where: Path, state: dict[str, Any]) -> str:
    """What a shell needs to reach the head: its address (RAY_API_SERVER_ADDRESS, which `ray job`
    reads first; RAY_ADDRESS would also redirect `sweep run` in that shell) and the token."""
    return (
        f"export RAY_API_SERVER_ADDRESS={_dashboard(state)}\n"
        "export RAY_AUTH_MODE=token\n"
        f"export RAY_AUTH_TOKEN_PATH={shlex.quote(str(where / TOKEN))}\n"
    )


def _lines(where: Path, state: dict[str, Any]) -> str:
    """The exact lines to type, for this head and this environment: from the checkout, the same
    lines as the README's one-machine block."""
    from sweep.cluster.head import ray_bin

    here = ROOT if (ROOT / "examples" / "simulated.yaml").is_file() else Path.cwd()
    venv = ray_bin().parent
    try:  # typed from the checkout: the venv by its path there, as the README writes it
        rel = venv.relative_to(here)
        bin_dir, job_bin = str(rel), f"$PWD/{rel}"
    except ValueError:
        bin_dir = job_bin = str(venv)
    env_json = '"{\\"env_vars\\": {\\"PATH\\": \\"' + job_bin + ':$PATH\\"}}"'
    exports = "".join(f"  {ln}\n" for ln in _exports(where, state).splitlines())
    return (
        f"  dashboard {_dashboard(state)}; Ray's logs in {state['temp_dir']}\n"
        f"type these in your shell (or: source {shlex.quote(str(where / ENV))}):\n{exports}"
        f"then, from {shlex.quote(str(here))}, submit a job and read its output again:\n"
        "  JOB=job-$(date +%Y%m%d-%H%M%S)\n"
        f'  {bin_dir}/ray job submit --submission-id "$JOB" --working-dir . --runtime-env-json {env_json} '
        '-- python -m sweep run examples/simulated.yaml --limit 4 --out "$PWD/runs/job"\n'
        f'  {bin_dir}/ray job logs "$JOB"\n'
        f"stop the head with: {bin_dir}/sweep cluster down{_dir_flag(where)}"
    )


def _dir_flag(where: Path) -> str:
    """` --dir WHERE` unless it is the default, which every action finds by itself."""
    return "" if where == Path(DEFAULT_DIR).expanduser().resolve() else f" --dir {shlex.quote(str(where))}"
