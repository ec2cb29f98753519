"""Replays README.md's mutation table (`bench/mutations.yaml`): each mutation is applied to a fresh copy
of the working tree and the tests it names are run there; they must fail. Prints a table and
`N of M caught`; exits 1 when a mutation survived, timed out, or could not be applied (a stale entry:
its `find` is not in its file exactly once), 2 on bad usage.

    .venv/bin/python bench/mutations.py                     # every mutation, one after another
    .venv/bin/python bench/mutations.py --list              # the entries, numbered
    .venv/bin/python bench/mutations.py --only 4 "[top_p]"  # entry 4, and any mutation whose name has "[top_p]"

The copy holds what git sees in the working tree (tracked files as they are on disk, and untracked
files git does not ignore), with `.venv` and the sibling `shared/` linked in. Its tests run with this
checkout's interpreter, `cwd` and `PYTHONPATH` set to the copy: the project is installed editable, and
`PYTHONPATH` comes before the editable finder, so the copy's modules are imported — checked for each
copy before its tests run. A mutation counts as caught only if the same tests pass on an unmutated
copy (checked once per test selection; `--no-baseline` skips that).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "bench" / "mutations.yaml"
PACKAGES = ("sweep", "debate", "actors", "data", "search_spaces", "tests")  # each must import from the copy
PYTEST = ("-m", "pytest", "-q", "-x", "-p", "no:cacheprovider")
GRACE_S = 60.0  # after a timeout, how long pytest gets to tear its fixtures (a Ray head) down


class Usage(Exception):
    """Bad input: a malformed table, an unknown `--only` name."""


@dataclass(frozen=True)
class Patch:
    file: str
    find: str
    replace: str


@dataclass(frozen=True)
class Mutation:
    entry: int  # 1-based position of its entry (its README row) in the table
    name: str  # the README row's words
    label: str  # which alternative of the row; "" when the row names one mutation
    patches: tuple[Patch, ...]
    tests: tuple[str, ...]
    timeout: float | None

    @property
    def id(self) -> str:
        return f"{self.name} [{self.label}]" if self.label else self.name


def _text(raw: dict[str, Any], key: str, where: str, empty: bool = False) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or (not empty and not value):
        raise Usage(f"{where}: `{key}` must be a {'' if empty else 'non-empty '}string")
    return value


def _patches(raw: dict[str, Any], where: str) -> tuple[Patch, ...]:
    if "patches" in raw:
        items = raw["patches"]
        if not isinstance(items, list) or not items or "file" in raw:
            raise Usage(f"{where}: `patches` must be a non-empty list, without `file` beside it")
    else:
        items = [raw]
    out = []
    for i, p in enumerate(items):
        if not isinstance(p, dict):
            raise Usage(f"{where}: patch {i + 1} must be a mapping of file, find, replace")
        patch = Patch(
            _text(p, "file", where), _text(p, "find", where), _text(p, "replace", where, empty=True)
        )
        if patch.find == patch.replace:
            raise Usage(f"{where}: a patch of {patch.file} replaces its `find` with itself")
        out.append(patch)
    return tuple(out)


def _tests(raw: dict[str, Any], where: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    if "tests" not in raw:
        if not default:
            raise Usage(f"{where}: `tests` is missing")
        return default
    tests = raw["tests"]
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t.strip() for t in tests):
        raise Usage(f"{where}: `tests` must be a non-empty list of pytest arguments")
    return tuple(tests)


def load(path: Path = TABLE) -> list[Mutation]:
    """Every mutation of the table, in order (a row with variants gives one per variant)."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise Usage(f"{path}: cannot read the table ({type(e).__name__}: {e}); fix the file") from None
    entries = doc.get("mutations") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise Usage(f"{path}: expected a top-level `mutations:` list")
    out: list[Mutation] = []
    for n, raw in enumerate(entries, 1):
        where = f"{path.name} entry {n}"
        if not isinstance(raw, dict):
            raise Usage(f"{where}: must be a mapping")
        name = _text(raw, "name", where)
        timeout = raw.get("timeout")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise Usage(f"{where}: `timeout` must be a positive number of seconds")
        if "variants" not in raw:
            out.append(Mutation(n, name, "", _patches(raw, where), _tests(raw, where), timeout))
            continue
        variants = raw["variants"]
        if not isinstance(variants, list) or len(variants) < 2 or {"file", "patches"} & set(raw):
            raise Usage(f"{where}: `variants` must list two or more alternatives, with no patch beside it")
        tests = _tests(raw, where) if "tests" in raw else ()
        labels = set()
        for v in variants:
            if not isinstance(v, dict):
                raise Usage(f"{where}: each variant must be a mapping")
            label = _text(v, "label", where)
            if label in labels:
                raise Usage(f"{where}: two variants are labelled {label!r}")
            labels.add(label)
            vwhere = f"{where} [{label}]"
            out.append(Mutation(n, name, label, _patches(v, vwhere), _tests(v, vwhere, tests), timeout))
    return out


def select(mutations: Sequence[Mutation], only: Sequence[str]) -> list[Mutation]:
    """The mutations `only` names: an entry number, or a piece of a mutation's id (case-insensitive)."""
    if not only:
        return list(mutations)
    chosen: set[int] = set()
    for key in only:
        hits = {
            i
            for i, m in enumerate(mutations)
            if (key.isdigit() and m.entry == int(key)) or (not key.isdigit() and key.lower() in m.id.lower())
        }
        if not hits:
            raise Usage(f"--only {key!r}: no mutation has that number or name; see --list")
        chosen |= hits
    return [m for i, m in enumerate(mutations) if i in chosen]


def apply(root: Path, patches: Sequence[Patch]) -> str | None:
    """Apply `patches` under `root`; the reason it cannot (the entry is stale), or None."""
    for p in patches:
        target = root / p.file
        try:
            text = target.read_text(encoding="utf-8")
        except OSError as e:
            return f"{p.file}: cannot read ({e.strerror or e})"
        count = text.count(p.find)
        if count != 1:
            first = p.find.splitlines()[0][:60] if p.find else ""
            return f"{p.file}: `find` occurs {count} times, not once ({first!r}...)"
        target.write_text(text.replace(p.find, p.replace), encoding="utf-8")
    return None


def working_tree() -> list[str]:
    """What git sees in the working tree: tracked files present on disk and untracked, unignored ones."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted({f for f in listing.split("\0") if f and os.path.lexists(ROOT / f)})


@contextmanager
def copy_of_tree(files: Sequence[str], keep: bool) -> Iterator[Path]:
    """A fresh copy of `files` at `<tmp>/main`, with `.venv` and `<tmp>/shared` linked to this
    checkout's (tests find `../shared/benchmarks` and README's `.venv/bin/...` lines from the root)."""
    top = Path(tempfile.mkdtemp(prefix="mutations-"))
    try:
        main = top / "main"
        for f in files:
            dest = main / f
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dest, follow_symlinks=False)
        for name, src in ((main / ".venv", ROOT / ".venv"), (top / "shared", ROOT.parent / "shared")):
            if src.exists():
                name.symlink_to(src.resolve())
        yield main
    finally:
        if keep:
            print(f"  kept: {top}", flush=True)
        else:
            shutil.rmtree(top, ignore_errors=True)


def environment(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(copy), env.get("PYTHONPATH", "")) if p)
    return env


def check_imports(python: str, copy: Path) -> str | None:
    """None when every package imports from `copy`; else what was imported from where. Probed from the
    copy (as pytest runs) and from beside it (as a subprocess a test starts elsewhere, or a Ray worker,
    runs: only PYTHONPATH leads those to the copy)."""
    # Every directory a package is read from (`tests` is a namespace package: no `__file__`).
    names = ", ".join(PACKAGES)
    probe = f"import {names}; print('\\n'.join(d for m in ({names}) for d in m.__path__))"
    for cwd in (copy, copy.parent):
        proc = subprocess.run(
            [python, "-c", probe], cwd=cwd, env=environment(copy), capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            return f"the copy's packages do not import from {cwd}: {proc.stderr.strip().splitlines()[-1:]}"
        outside = [
            f for f in proc.stdout.splitlines() if not Path(f).resolve().is_relative_to(copy.resolve())
        ]
        if outside:
            return f"imported from outside the copy (from {cwd}): {', '.join(outside)}"
    return None


def runs(tests: Sequence[str]) -> list[list[str]]:
    """The pytest runs of a selection: plain node ids and files together, each item with options alone."""
    plain = [t for t in tests if not any(a.startswith("-") for a in shlex.split(t))]
    merged = [a for t in plain for a in shlex.split(t)]
    return ([merged] if merged else []) + [shlex.split(t) for t in tests if t not in plain]


@dataclass
class Outcome:
    code: int | None  # pytest's exit code; None: timed out
    seconds: float
    tail: str


def pytest(python: str, copy: Path, args: Sequence[str], timeout: float) -> Outcome:
    """Run pytest on `args` in `copy`. On a timeout it gets SIGINT first, so that its fixtures stop what
    they started (a Ray head), then its process group is killed."""
    log = copy.parent / "pytest.log"
    cmd = [python, *PYTEST, f"--basetemp={copy.parent / 'basetemp'}", *args]
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        # Its own process group: a timeout stops pytest and everything it started, nothing else.
        proc = subprocess.Popen(
            cmd, cwd=copy, env=environment(copy), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        except KeyboardInterrupt:
            _stop(proc)
            raise
        if code is None:
            _stop(proc)
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return Outcome(code, time.monotonic() - started, "\n".join(lines[-15:]))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    except ProcessLookupError:
        return
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@dataclass
class Result:
    mutation: Mutation
    status: str  # caught | survived | timeout | stale | error
    detail: str
    seconds: float = 0.0


class Runner:
    def __init__(self, python: str, timeout: float, baseline: bool, keep: bool, verbose: bool) -> None:
        self.python, self.timeout, self.baseline = python, timeout, baseline
        self.keep, self.verbose = keep, verbose
        self.files = working_tree()
        self._clean: dict[tuple[str, ...], Outcome] = {}  # a selection's run on an unmutated copy

    def run(self, m: Mutation) -> Result:
        timeout = m.timeout or self.timeout
        with copy_of_tree(self.files, self.keep) as copy:
            if (stale := apply(copy, m.patches)) is not None:
                return Result(m, "stale", stale)
            if (wrong := check_imports(self.python, copy)) is not None:
                return Result(m, "error", wrong)
            spent = 0.0
            for args in runs(m.tests):
                got = pytest(self.python, copy, args, timeout)
                spent += got.seconds
                if self.verbose:
                    print(got.tail, flush=True)
                if got.code is None:
                    return Result(m, "timeout", f"{shlex.join(args)}: no result in {timeout:g} s", spent)
                if got.code == 1:
                    return self._confirm(m, args, got, spent, timeout)
                if got.code != 0:  # 2-4: a collection error or bad usage; 5: no test selected
                    return Result(
                        m, "error", f"{shlex.join(args)}: pytest exit {got.code}: {_last(got.tail)}", spent
                    )
            return Result(m, "survived", f"{shlex.join(a for r in runs(m.tests) for a in r)} passed", spent)

    def _confirm(self, m: Mutation, args: list[str], got: Outcome, spent: float, timeout: float) -> Result:
        """Caught, unless the same tests fail without the mutation too."""
        red = _failed(got.tail) or f"{shlex.join(args)} failed"
        if not self.baseline:
            return Result(m, "caught", f"{red} (no baseline)", spent)
        key = tuple(args)
        if key not in self._clean:
            with copy_of_tree(self.files, self.keep) as clean:
                self._clean[key] = pytest(self.python, clean, args, timeout)
        base = self._clean[key]
        if base.code != 0:
            return Result(
                m,
                "error",
                f"{shlex.join(args)} fails unmutated too (exit {base.code}): {_last(base.tail)}",
                spent,
            )
        return Result(m, "caught", red, spent)


def _failed(tail: str) -> str:
    """pytest's summary line of the first test that failed (`FAILED node - why`), or ""."""
    lines = [ln for ln in tail.splitlines() if ln.startswith(("FAILED ", "ERROR "))]
    return lines[0][:240] if lines else ""


def _last(tail: str) -> str:
    return tail.splitlines()[-1][:200] if tail else "(no output)"


def table(results: Sequence[Result]) -> str:
    width = min(70, max(len(r.mutation.id) for r in results))
    rows = [f"{'#':>3}  {'mutation':<{width}}  {'result':<8}  {'s':>6}  detail"]
    for r in results:
        m, label = r.mutation, f" [{r.mutation.label}]" if r.mutation.label else ""
        name = m.id if len(m.id) <= width else m.name[: width - len(label) - 1] + "…" + label
        rows.append(f"{r.mutation.entry:>3}  {name:<{width}}  {r.status:<8}  {r.seconds:>6.1f}  {r.detail}")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--only", nargs="+", default=[], metavar="NAME", help="entry numbers or pieces of mutation names"
    )
    ap.add_argument("--list", action="store_true", help="print the entries and exit")
    ap.add_argument(
        "--table", type=Path, default=TABLE, help="the mutations file (default: bench/mutations.yaml)"
    )
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for each pytest run (default 300)")
    ap.add_argument(
        "--python", default=str(ROOT / ".venv" / "bin" / "python"), help="the interpreter (default .venv's)"
    )
    ap.add_argument(
        "--no-baseline", action="store_true", help="do not check that caught tests pass unmutated"
    )
    ap.add_argument("--keep", action="store_true", help="keep each copy (its path is printed)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the end of every pytest run")
    args = ap.parse_args(argv)
    try:
        if args.timeout <= 0:
            raise Usage(f"--timeout must be positive, got {args.timeout:g}")
        if not os.access(args.python, os.X_OK):
            raise Usage(f"--python {args.python}: not an executable; run `make setup` or name one")
        chosen = select(load(args.table), args.only)
    except Usage as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:
        for m in chosen:
            where = ", ".join(dict.fromkeys(p.file for p in m.patches))
            print(f"{m.entry:>3}  {m.id}\n       patches {where}; tests {' '.join(m.tests)}")
        return 0
    runner = Runner(args.python, args.timeout, not args.no_baseline, args.keep, args.verbose)
    results = []
    try:
        for m in chosen:
            print(f"{m.entry:>3}  {m.id} ...", end=" ", flush=True)
            results.append(runner.run(m))
            print(f"{results[-1].status} ({results[-1].seconds:.1f} s)", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: the results so far", file=sys.stderr)
    if not results:
        return 1
    caught = sum(r.status == "caught" for r in results)
    print()
    print(table(results))
    print(f"\n{caught} of {len(results)} caught")
    return 0 if caught == len(results) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
