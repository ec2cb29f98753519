"""Where a study's sampler draws from: the study seed and the trial's *slot*, never the process.

A fresh trial (not a retry) takes a slot when it is asked: the smallest slot no other fresh trial
holds, a slot counting as free again once its only holder was abandoned (its driver died or was
interrupted) before it drew any parameter. The slot is stored on the trial (system attr `SLOT`), and
the trial draws every parameter from the configured sampler built for it alone, seeded from (study
seed, slot). So a rerun after a kill, or a second driver (`--join`), never draws a configuration a
trial already drew: slots are taken inside `study.ask()`, which the runner calls under the study
lock. A retry (`RETRY_OF`, enqueued with its original's params) takes no slot: it draws nothing.
With `sampler.seed: null` each sampler object picks a random study seed of its own: no two drivers
share a sequence, and nothing is reproducible, as asked."""

from __future__ import annotations

import hashlib
import secrets
import warnings
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from sweep.study.samplers import SAMPLERS

SLOT = "sweep:slot"  # system attr of a fresh trial: its slot
RETRY_OF = "retry_of"  # user attr of a retry: the number of the trial it repeats (the first one)
KILLS = "kills"  # user attr of a retry: how many times a driver died running these params
ABANDONED = "abandoned"  # user attr of a trial failed because its driver went: "killed" or "interrupted"


def derive_seed(seed: int, slot: int) -> int:
    """The seed of the sampler that draws slot `slot`'s parameters (fits numpy's 32 bits)."""
    digest = hashlib.sha256(f"debate-sweep/study-slot/{seed}/{slot}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _frees_its_slot(t: FrozenTrial) -> bool:
    """An abandoned trial that drew nothing: a slot nobody used, free for the next fresh trial."""
    return t.state == TrialState.FAIL and not t.params and bool(t.user_attrs.get(ABANDONED))


def take_slot(study: optuna.Study, trial: FrozenTrial) -> int | None:
    """The slot `trial` draws from, recorded on it: its original's for a retry (None when that one
    has none), else the smallest slot no other fresh trial holds. Call under the study lock."""
    trials = study.get_trials(deepcopy=False)
    if RETRY_OF in trial.user_attrs:
        first = next((t for t in trials if t.number == trial.user_attrs[RETRY_OF]), None)
        slot = first.system_attrs.get(SLOT) if first is not None else None
        return int(slot) if slot is not None else None
    if SLOT in trial.system_attrs:
        return int(trial.system_attrs[SLOT])
    held = {
        int(t.system_attrs[SLOT])
        for t in trials
        if t.number != trial.number
        and SLOT in t.system_attrs
        and RETRY_OF not in t.user_attrs
        and not _frees_its_slot(t)
    }
    slot = min(set(range(len(held) + 1)) - held)
    study._storage.set_trial_system_attr(trial._trial_id, SLOT, slot)
    return slot


class SlotSampler(BaseSampler):
    """The registered sampler `name` with `args`, rebuilt for every trial with a seed derived from
    (study seed, the trial's slot); every Optuna sampler call is delegated to that trial's copy.
    Trials asked elsewhere (told here, e.g. a dead driver's) go to a copy seeded by the study seed."""

    def __init__(self, name: str, args: dict[str, Any]) -> None:
        self.name, self.args = name, dict(args)
        seed = SAMPLERS.resolve(name, args).kwargs.get("seed")
        self.seed = int(seed) if seed is not None else secrets.randbits(32)
        self._fallback = self._build(self.seed)
        self._by_trial: dict[int, BaseSampler] = {}

    def _build(self, seed: int) -> BaseSampler:
        with warnings.catch_warnings():  # "experimental" options: said once, by the first build
            if hasattr(self, "_fallback"):
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler: BaseSampler = SAMPLERS.build(self.name, {**self.args, "seed": seed})
        return sampler

    def _of(self, trial: FrozenTrial) -> BaseSampler:
        return self._by_trial.get(trial.number, self._fallback)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        slot = take_slot(study, trial)
        inner = self._fallback if slot is None else self._build(derive_seed(self.seed, slot))
        self._by_trial[trial.number] = inner
        inner.before_trial(study, trial)

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._of(trial).infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return self._of(trial).sample_relative(study, trial, search_space)

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return self._of(trial).sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self._by_trial.pop(trial.number, self._fallback).after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        # Optuna reseeds per worker thread of `optimize(n_jobs>1)`; draws here depend on slots alone.
        self._fallback.reseed_rng()
