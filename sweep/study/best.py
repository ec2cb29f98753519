"""`sweep study CONFIG --best [PATH]`: the study's best params (every Pareto trial) as a ready-to-run
sweep config on the test split. The file is written only where it is absent or an earlier `--best`
file (its first line says so), one writer at a time, atomically; anything else is refused in one line
(exit 2) and left as it was."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from sweep.config import paths
from sweep.config.sweep import ConfigError, validate
from sweep.store.repair import is_disk_full
from sweep.store.targets import own_beside, replace_file, unwritable
from sweep.study.config import StudySetup, base_file, is_test_split

HEADER = "# best params of study"  # the first line of every file `--best` writes: "an earlier one"


def held_out_split(benchmark: str, split: str) -> str:
    """The test counterpart of a tuning split: `test`, or `<scheme>:test` when the scheme has one."""
    from data.benchmarks.registry import benchmark_info

    if is_test_split(split):
        return split
    known = benchmark_info(benchmark).split_names()
    scheme = split.split(":", 1)[0] if ":" in split else None
    return f"{scheme}:test" if scheme and f"{scheme}:test" in known else "test"


def _finished_study(setup: StudySetup) -> Any:
    """The study as stored; ConfigError when there is none yet."""
    import optuna

    from sweep.study.storage import open_storage

    url = setup.storage_url()
    if url.startswith("journal:") and not Path(url.removeprefix("journal:")).is_file():
        raise ConfigError(
            f"storage: no study journal at {url.removeprefix('journal:')}; run `sweep study` first"
        )
    try:
        study = optuna.load_study(study_name=setup.cfg.name, storage=open_storage(url))
    except KeyError:
        raise ConfigError(f"name: no study '{setup.cfg.name}' in {url}; run `sweep study` first") from None
    if study.user_attrs.get("fingerprint") != setup.fingerprint():
        raise ConfigError(
            f"name: study '{setup.cfg.name}' in {url} was created from another base sweep, method, space or "
            "objectives; give the config (and --base-set) it was run with"
        )
    return study


def best_sweep(setup: StudySetup, trials: list[Any]) -> dict[str, Any]:
    """The tuned sweep on the test split: the base sweep's own methods (the baselines) plus one entry
    per distinct best (Pareto) params, on the base sweep's own items and seeds — the study's
    narrowing for tuning (split, offset, limit, seeds) undone; its other overrides kept."""
    raw, written = setup.base.model_dump(mode="json"), base_file(setup.cfg, setup.source.parent)
    raw["name"], raw["output_dir"] = f"{setup.cfg.name}-best", str(setup.out / "best-test")
    raw["methods"] = list(written.get("methods") or [])
    for t in trials:
        args = t.user_attrs.get("method_args") or {
            **setup.cfg.method.args,
            **t.params,
        }  # trained: its checkpoint
        entry = {"name": setup.cfg.method.name, "args": args}
        raw["methods"] += [entry] if entry not in raw["methods"] else []
    raw["seeds"] = written.get("seeds", raw["seeds"])
    own = {d.get("name"): d for d in written.get("datasets", []) if isinstance(d, dict)}
    for ds in raw["datasets"]:
        mine = own.get(ds["name"], {})
        for key in ("offset", "limit", "seed"):
            ds[key] = mine.get(key, 0 if key == "offset" else None)
        ds["split"] = held_out_split(ds["name"], ds["split"])
    validate(raw)  # ready to run: the same checks `sweep run` makes
    return raw


def check_target(path: Path) -> None:
    """ConfigError unless `path` is absent or an earlier `--best` file (a regular file, not a link)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ConfigError(
            f"--best: {path} is not a regular file; give a new file name such as runs/x/best.yaml"
        )
    if path.is_file():
        try:
            with open(path, "rb") as fh:
                first = fh.read(len(HEADER))
        except OSError as e:
            raise unwritable(path, e, "--best") from None
        if first != HEADER.encode():
            raise ConfigError(
                f"--best: {path} exists and is not an earlier --best file; give a new file name, or move it aside"
            )


def write_best(setup: StudySetup, dest: str) -> int:
    """Write the best params (every Pareto trial) as a sweep config on the test split; the exit code."""
    from sweep.study.storage import best_trials

    path = paths.place(dest, "--best", "a file such as runs/x/best.yaml") if dest else setup.out / "best.yaml"
    check_target(path)
    trials = best_trials(_finished_study(setup))
    if not trials:
        print(f"error: study '{setup.cfg.name}' has no completed trial yet; run it first", file=sys.stderr)
        return 1
    raw = best_sweep(setup, trials)
    lines = [f"{HEADER} '{setup.cfg.name}' ({setup.storage_url()}), on the test split"]
    for t in trials:
        values = ", ".join(f"{o} {v:.4g}" for o, v in zip(setup.cfg.objectives, t.values, strict=True))
        lines.append(f"# trial {t.number}: {values}")
    lock = own_beside(path, "--best file", "--best")
    try:
        check_target(path)  # again, under the lock: another writer may have put a file there
        replace_file(path, ("\n".join(lines) + "\n" + yaml.safe_dump(raw, sort_keys=False)).encode())
    except OSError as e:
        if is_disk_full(e):
            print(f"error: no space left on the device for {path}; free space and rerun", file=sys.stderr)
            return 1
        raise unwritable(path, e, "--best") from None
    finally:
        lock.release()
    print(f"wrote {path}: {len(raw['methods'])} method spec(s); run it with: sweep run {path}")
    return 0
