"""Which of one train seed's CPP or Adv-CPP restarts the cpp bench tests (bench/cpp_vs_full.py), and the
trainings a run may take from an earlier one instead of training them again.

Two choices, declared by the protocol (bench/protocols/README.md): without `adv_choice`, the restart
whose best evaluation on its own training episodes scored highest (eval.return, the score each
training keeps its best policy by); with it, the restart whose best policy is the most accurate under
the adversary on the declared items and seeds, the same items for every restart. Neither sees a test
item."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import debate.policies.checkpoint as ckpt
from sweep.config.errors import ConfigError


def check_restarts(p: Any, stride: int) -> None:
    """ValueError (a protocol's validation) when protocol `p`'s restarts reuse a train or test seed
    (restart r of train seed s trains with s + `stride` r), or a choice among them has nothing to
    choose between, is the test split or runs under a test seed (or one seed twice)."""
    most, key = max((p.adv_restarts, "adv_restarts"), (p.restarts, "restarts"))
    for seed in (s + stride * r for s in p.train_seeds for r in range(1, most)):
        if seed in p.train_seeds or seed in p.test_seeds:
            raise ValueError(
                f"{key}: restart seed {seed} (a train seed + {stride} x restart) is also a train or "
                f"test seed; pick seeds below {stride}"
            )
    for key, c, restarts in (("choice", p.choice, p.restarts), ("adv_choice", p.adv_choice, p.adv_restarts)):
        if c is None:
            continue
        if restarts < 2:
            how = key.replace("choice", "restarts")
            raise ValueError(f"{key}: nothing to choose between; set {how} >= 2 or remove it")
        if (c.dataset, c.split) == (p.test.dataset, p.test.split):
            raise ValueError(
                f"{key}.split: '{c.split}' is the test items' split; choose on items the test never holds"
            )
        for seed in (s for s in c.seeds if s in p.test_seeds):
            raise ValueError(f"{key}.seeds: {seed} is a test seed; choose under seeds the test never uses")
        for seed in (s for i, s in enumerate(c.seeds) if s in c.seeds[:i]):
            raise ValueError(f"{key}.seeds: seed {seed} appears twice; list each seed once")


def best_eval(outcome: Any) -> float:
    """A training's best evaluation on training items (eval.return, as its best policy was kept by)."""
    evals = [h["eval.return"] for h in outcome.history if "eval.return" in h]
    if not evals:
        raise ConfigError("adv_restarts: a restart was never evaluated; set eval_every > 0 in train.set")
    return max(evals)


def chosen(outcomes: Sequence[Any]) -> int:
    """Which of one seed's restarts is tested: the best evaluation on training items (the first on a tie)."""
    scores = [best_eval(o) for o in outcomes]
    return scores.index(max(scores))


def most_accurate(outcomes: Sequence[Any], accuracy: Callable[[str], float]) -> tuple[int, list[float]]:
    """Which of one seed's restarts is tested under `adv_choice`: the one whose best policy (its final
    one when never evaluated) `accuracy` scores highest (the first on a tie), and every score."""
    scores = [accuracy(str(o.best or o.policy)) for o in outcomes]
    return scores.index(max(scores)), scores


def choose(
    outcomes: Sequence[Any],
    by_accuracy: bool,
    accuracy: Callable[[str], float],
    who: str = "adversarial: Adv-CPP",
) -> tuple[int, str, str]:
    """One seed's restart to test, as (index, the report's note key, the note): by `accuracy` on the
    protocol's choice items when `by_accuracy`, else by the best evaluation on training items; `who`
    starts the note key."""
    if len(outcomes) == 1:
        return 0, "", ""
    if by_accuracy:
        pick, scores = most_accurate(outcomes, accuracy)
        note = ", ".join(f"{a:.3f}" for a in scores)
        return pick, f"{who} restart tested (accuracy of each on the choice items)", f"r{pick} ({note})"
    pick, note = chosen(outcomes), ", ".join(f"{best_eval(o):+.3f}" for o in outcomes)
    return pick, f"{who} restart tested (best eval.return of each)", f"r{pick} ({note})"


def stored_fingerprint(training: Path) -> str | None:
    """The fingerprint of the training in dir `training`, from its newest checkpoint's provenance (None
    before its first checkpoint)."""
    saved = sorted((training / "checkpoints").glob("policy-u*.npz"))
    return str(ckpt.load(str(saved[-1])).provenance["fingerprint"]) if saved else None


def reuse(source: str | Path, out: str | Path, wanted: Mapping[str, str]) -> list[str]:
    """Copy each training dir `source/<tag>` that `out` lacks, and whose fingerprint is `wanted[tag]`,
    into `out` and return the tags copied (copies, not links: a resumed training rewrites some of its
    files). A training of another config stays where it is and trains anew under `out`. The training
    then resumes from its checkpoints, and a resume refuses a checkpoint whose training fingerprint is
    not its own, so a copy can only stand in for the same training."""
    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise ConfigError(f"--reuse: {source} is not a directory; give an earlier run's --out")
    if source.resolve() == out.resolve():
        raise ConfigError("--reuse: the same directory as --out; give an earlier run's --out")
    out.mkdir(parents=True, exist_ok=True)
    copied = []
    for tag, fingerprint in wanted.items():
        if not (source / tag).is_dir() or (out / tag).exists():
            continue
        if stored_fingerprint(source / tag) not in (None, fingerprint):
            continue
        shutil.rmtree(out / f".{tag}.tmp", ignore_errors=True)  # what a killed copy left
        shutil.copytree(source / tag, out / f".{tag}.tmp")
        os.replace(out / f".{tag}.tmp", out / tag)  # a kill leaves no half-copied training under its name
        copied.append(tag)
    return copied
