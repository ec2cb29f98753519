"""`sweep calibrate TARGETS.yaml`: fit a population to a targets file's `fit:` rows (an Optuna study
in OUT, resumable: rerun the same command after a kill), then predict every row, on the fitted
population and on v1 beside it, and report predicted against published (`OUT/predictions.csv`,
`OUT/calibration.md`, one MLflow run). `--predict-only REF` skips the fit.

Exit codes: 0 success; 2 bad input or usage (one line, nothing run); 1 a failure while running
(finished trials stay in OUT/study.journal; rerun to continue)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from sweep.calibrate.options import add_parser as add_parser  # `sweep`'s parser registers it from here
from sweep.config.errors import ConfigError
from sweep.tracking.choice import choose_tracking

if TYPE_CHECKING:  # at run time imported by `run`: `sweep --help` stays light
    from actors.populations import Population
    from sweep.calibrate.fit import FitSettings
    from sweep.calibrate.targets import Targets


def _checkpoints(given: list[str], targets: Targets) -> dict[str, str]:
    """LABEL=PATH pairs; each label (or dataset/label key) must name a row that needs a checkpoint."""
    needing = [r for r in targets.rows if r.needs == "checkpoint"]
    names = {r.label for r in needing} | {r.key for r in needing}
    out = {}
    for item in given:
        # a label may hold '=' itself ("RUMAD B=12"): the longest row name the item starts with wins
        named = max((n for n in names if item.startswith(n + "=")), key=len, default=None)
        label, sep, path = (named, "=", item[len(named) + 1 :]) if named else item.partition("=")
        if not sep or not label or not path:
            raise ConfigError(
                f"--checkpoint: {item!r} is not LABEL=PATH; e.g. --checkpoint CPP=runs/t/policy.pt"
            )
        if label not in names:
            known = ", ".join(sorted({r.label for r in needing})) or "none"
            raise ConfigError(
                f"--checkpoint: no row labelled {label!r} needs a checkpoint; those that do: {known}"
            )
        out[label] = path
    return out


def _fixed_population(ref: str | None, targets: Targets) -> Population | None:
    """The population `--predict-only` names (None for v1 or without the option)."""
    if ref is None or ref == "v1":
        return None
    from actors.populations import PopulationError, load

    try:
        pop = load(ref)
        for m in targets.members:
            pop.member(m)
    except PopulationError as e:
        raise ConfigError(f"--predict-only: {e}") from None
    return pop


@dataclass(frozen=True)
class Job:
    """A checked command line: what to fit and predict, and where everything goes."""

    args: argparse.Namespace
    targets: Targets
    checkpoints: dict[str, str]
    fixed: Population | None  # --predict-only's population (None: fit one, or v1)
    out: Path
    pop_out: Path | None
    uri: str | None
    settings: FitSettings

    def resolved(self) -> dict[str, Any]:
        """What `calibrate.resolved.yaml` records."""
        t, s = self.targets, self.settings
        out: dict[str, Any] = {"targets": str(t.path), "targets_digest": t.digest}
        out |= {
            "predict_only": self.args.predict_only,
            "v1": not self.args.no_v1,
            "checkpoints": self.checkpoints,
        }
        out |= {k: getattr(s, k) for k in ("trials", "sampler", "seed", "fit_limit", "timeout_min")}
        return out | {"fit_seeds": list(s.fit_seeds)}


def _job(args: argparse.Namespace) -> Job:
    """The command line checked, before anything is written (ConfigError naming the option)."""
    from sweep.calibrate.evaluate import row_method, runnable
    from sweep.calibrate.fit import FitSettings
    from sweep.calibrate.targets import load_targets
    from sweep.config.paths import file_url, output_dir, place

    targets = load_targets(args.targets)
    checkpoints = _checkpoints(args.checkpoint, targets)
    if args.predict_only is not None and args.population_out:
        raise ConfigError("--population-out: nothing is fitted with --predict-only; drop one of them")
    fixed = _fixed_population(args.predict_only, targets)
    if args.fit_seeds > len(targets.seeds):
        raise ConfigError(
            f"--fit-seeds: {args.fit_seeds} is more than the targets' {len(targets.seeds)} seeds; lower it"
        )
    if (not args.no_v1 or args.predict_only == "v1") and not targets.v1:
        raise ConfigError(
            f"{targets.path}: v1: no v1 engine args to run v1 on; add a `v1:` section or pass --no-v1"
        )
    for row in runnable(list(targets.rows), checkpoints):
        row_method(row, checkpoints)  # a method that cannot be built fails now, not after the fit
    out = output_dir(args.out or f"runs/calibrate_{targets.population}", "--out")
    pop_out = place(args.population_out, "--population-out") if args.population_out else None
    uri = choose_tracking(out, no_tracking=args.no_tracking, flag_uri=args.tracking_uri).uri
    if uri is not None:
        uri = file_url(uri, "--tracking-uri")
    seeds = tuple(targets.seeds[: args.fit_seeds])
    settings = FitSettings(
        seeds,
        args.trials,
        args.sampler,
        args.seed,
        args.fit_limit,
        args.timeout,
        workers=args.workers,
        joint_moves=args.joint_moves,
    )
    return Job(args, targets, checkpoints, fixed, out, pop_out, uri, settings)


def say(line: str) -> None:
    """A progress line on stderr."""
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the `calibrate` subcommand parsed by `add_parser`; returns the exit code."""
    from sweep import interrupt
    from sweep.calibrate.fit import fingerprint
    from sweep.run.preflight import Unreachable, check_tracking
    from sweep.store.ownership import DirLock
    from sweep.store.targets import own_beside, own_dir, replace_file, unwritable

    locks: list[DirLock] = []
    out: Path | None = None
    try:
        job = _job(args)
        out = job.out
        check_tracking(job.uri)
        ident = (
            job.targets.digest if args.predict_only is not None else fingerprint(job.targets, job.settings)
        )
        locks.append(own_dir(job.out, "calibrate", ident, field="--out"))
        if job.pop_out is not None:
            locks.append(own_beside(job.pop_out, "population file", "--population-out"))
        interrupt.install()
        try:  # first: it marks the dir as a calibration's (`sweep.store.targets.dir_kind`)
            text = yaml.safe_dump(job.resolved(), sort_keys=False).encode()
            replace_file(job.out / "calibrate.resolved.yaml", text)
        except OSError as e:
            raise unwritable(job.out, e, "--out") from None
        return _work(job)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Unreachable as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        say(f"interrupted: finished trials stay in {out}; rerun the same command to continue")
        return 1
    except Exception as e:  # noqa: BLE001 - the CLI's last line of defence: one line, exit 1
        print(f"error: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", file=sys.stderr)
        return 1
    finally:
        for lock in locks:
            lock.release()


def _work(job: Job) -> int:
    from sweep.calibrate import report
    from sweep.calibrate.fit import fit
    from sweep.calibrate.predict import predict
    from sweep.store.targets import replace_file, unwritable

    targets, settings, population = job.targets, job.settings, job.fixed
    how = f"predicted on population {population.name if population else 'v1'} as given (no fit)"
    if job.args.predict_only is None:
        say(f"fit: {targets.population} to {len(list(targets.fit_rows()))} rows, {settings.trials} trials")
        result = fit(targets, job.out, settings, say)
        population = result.population
        for path, field in ((job.out / "population.yaml", "--out"), (job.pop_out, "--population-out")):
            try:
                if path is not None:
                    replace_file(path, population.dump().encode("utf-8"))
            except OSError as e:
                raise unwritable(path or job.out, e, field) from None
        say(
            f"fit: best objective {result.value:.4g} (trial {result.number}); wrote {job.out / 'population.yaml'}"
        )
        how = (
            f"fitted with {settings.sampler} ({result.complete} trials, seed {settings.seed}) on seeds "
            f"{list(settings.fit_seeds)} and "
            + ("every item" if settings.fit_limit is None else f"at most {settings.fit_limit} items")
            + " per dataset"
            + (" (rows that never debate at their expected accuracy)" if settings.expected else "")
        )
    split = "fit" if job.args.fit_only else None
    done = predict(targets, population, job.checkpoints, not job.args.no_v1, say, split, job.args.workers)
    recs = report.records(done.rows, done.results, done.v1)
    name = population.name if population else "v1"
    how += f"; predicted on seeds {list(targets.seeds)}"
    try:
        files = report.write_outputs(
            job.out, report.csv_text(recs), report.calibration_md(targets, name, recs, done.skipped, how)
        )
    except OSError as e:
        raise unwritable(job.out, e, "--out") from None
    metrics = report.scores(recs) | report.scores(recs, v1=True)
    if job.uri is not None:
        params = {
            "targets_digest": targets.digest,
            "population": name,
            "population_digest": population.digest if population else "v1",
            "trials": settings.trials if job.args.predict_only is None else 0,
            "sampler": settings.sampler,
            "seeds": list(targets.seeds),
            "fit_seeds": list(settings.fit_seeds),
            "fit_limit": settings.fit_limit,
        }
        report.log_mlflow(job.uri, job.out, f"calibrate {name}", params, metrics, files)
    shown = ", ".join(f"{k} {v:.3g}" for k, v in metrics.items() if "." not in k)
    say(f"wrote {files[0]} and {files[1]}: {shown}")
    return 0
