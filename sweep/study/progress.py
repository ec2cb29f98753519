"""What `sweep study` says while it works: after each trial, how many of the study's trials are done,
the best so far, the time per trial and an ETA; a line when nothing was printed for a while; and, at
the end, a note when every completed trial scored the same (the objective told the params apart not
at all)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from optuna.trial import FrozenTrial, TrialState
from rich.console import Console

from sweep.train.progress import duration

COUNTED = (TrialState.COMPLETE, TrialState.PRUNED)  # what `n_trials` counts once finished


class StudyProgress:
    """The progress lines of one study driver (`clock` is replaceable for tests)."""

    def __init__(
        self,
        console: Console,
        n_trials: int,
        parallel: int,
        objectives: list[str],
        every_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console, self.n_trials, self.parallel, self.objectives = console, n_trials, parallel, objectives
        self.every_s, self.clock = every_s, clock
        self.started = self.last = clock()
        self.seconds: list[float] = []  # the trials this driver finished (pruned and failed included)

    def say(self, line: str) -> None:
        self.console.print(line, highlight=False)
        self.last = self.clock()

    def told(self, study: Any, trial: FrozenTrial) -> str:
        """The line after `trial` was told: trials done of `n_trials`, the best so far, time per trial, ETA."""
        self.seconds.append(float(trial.user_attrs.get("seconds", 0.0)))
        trials = study.get_trials(deepcopy=False)
        done = sum(t.state in COUNTED for t in trials)
        left = max(0, self.n_trials - done)
        mean = sum(self.seconds) / len(self.seconds)
        eta = f"ETA {duration(math.ceil(left / self.parallel) * mean)}" if left else "done"
        return f"trials {done}/{self.n_trials}: {best_so_far(study, trials, self.objectives)} | {duration(mean)}/trial, {eta}"

    def tick(self, running: int, episodes: int) -> None:
        """A line when nothing was printed for `every_s`: trials running, episodes run so far."""
        if running and self.clock() - self.last >= self.every_s:
            self.say(
                f"study: {running} trial(s) running, {episodes} episodes run so far, "
                f"{duration(self.clock() - self.started)} since start"
            )


def _value(objective: str, v: float) -> str:
    return f"{objective} {v:.4g}"


def best_so_far(study: Any, trials: list[FrozenTrial], objectives: list[str]) -> str:
    """`best accuracy 0.75 (trial 3)`, or the Pareto set's size for several objectives."""
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if not complete:
        return "no trial completed yet"
    if len(objectives) > 1:
        return f"Pareto set of {len(study.best_trials)} trial(s)"
    best = study.best_trial
    return f"best {_value(objectives[0], best.value)} (trial {best.number})"


def tie_notes(trials: list[FrozenTrial], objectives: list[str]) -> list[str]:
    """A line per objective on which every completed trial (two or more) scored the same."""
    complete = [t for t in trials if t.state == TrialState.COMPLETE and t.values]
    notes = []
    for i, objective in enumerate(objectives):
        values = {t.values[i] for t in complete}
        if len(complete) > 1 and len(values) == 1:
            notes.append(
                f"all {len(complete)} trials scored {_value(objective, values.pop())}: the objective does not "
                f"separate these parameters; run more items or seeds (e.g. --base-set datasets.0.limit=200, "
                f"--base-set 'seeds=[0,1,2]')"
            )
    return notes
