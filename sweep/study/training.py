"""Studies whose trials train: with `train:` set, a trial first trains a policy (`sweep.train`) with
the trial's reward weights and router arguments (RUMAD: α1–α6, β1–β4 are reward weights; θ_act,
θ_vis, B are arguments of the router, used while training and while evaluating; CPP: k, a,
round_scale, β, γ are reward coefficients, lr, entropy_coef, entropy_decay its policy gradient's),
then evaluates the
trained checkpoint on the study's base sweep (its dev split) like any other trial — so objectives such
as accuracy and tokens form a Pareto set.

Each trial trains in `<output_dir>/trials/<hash of its params>/`: a trial re-enqueued after its driver
died resumes that training from its last checkpoint. Pruning watches the training curve (it works for
multi-objective studies, where Optuna's own pruners do not): after `prune_warmup` updates, a trial
whose `prune_metric` (averaged over the last `prune_window` updates) is below the median of the
finished trials' at the same update is pruned, once `prune_startup_trials` trials have finished.
"""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.console import Console

from debate.episode import Agent
from debate.rewards import TERMS
from debate.spec import stable_hash
from search_spaces import SearchSpace, SpaceError
from sweep.config.sweep import ConfigError, SweepConfig
from sweep.study.silence import TRAIN_ACTIVATIONS
from sweep.study.spaces import check_method
from sweep.train.config import TrainSetup, load_train
from sweep.train.limits import StrictBool, Updates
from sweep.train.trainers import TRAINERS

if TYPE_CHECKING:  # optuna is imported where a study runs: `sweep run` must not need it
    from optuna.trial import Trial

CURVE = "train_curve"  # the trial user attr holding the pruned-on metric per update
PRUNE_METRICS = ("return", "accuracy", *(f"reward.{t}" for t in TERMS))  # higher is better


class TrainSpec(BaseModel):
    """`train:` of a study: the training config each trial runs, and how its curve is pruned."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config: str  # a training YAML (relative to the study file), e.g. train_rumad_simulated.yaml
    sets: list[str] = Field(default_factory=list)  # `key=value` overrides of the training config
    prune: StrictBool = True
    prune_metric: str = "return"  # a metric of each update (higher is better)
    prune_warmup: Updates = 10  # counts as strict and bounded as the training's (sweep.train.limits)
    prune_window: Updates = 5
    prune_startup_trials: Updates = 3

    @field_validator("prune_metric")
    @classmethod
    def _known_metric(cls, v: str) -> str:
        if v not in PRUNE_METRICS:
            raise ValueError(f"prune_metric '{v}' is not one of {', '.join(PRUNE_METRICS)}")
        return v


def load_training(
    spec: TrainSpec, here: Path, base: SweepConfig, method: str, fixed: dict[str, Any], space: SearchSpace
) -> TrainSetup:
    """The training config a study's trials run, checked against the study: the same method, the
    study's models, and a space whose reward weights and router arguments (over the study's `fixed`
    ones) both exist (ConfigError otherwise). A trial's params override the training config's router
    arguments."""
    path = Path(spec.config) if Path(spec.config).is_absolute() else here / spec.config
    try:
        setup = load_train(path, spec.sets)
    except ConfigError as e:
        raise ConfigError(f"train ({spec.config}): {e}") from None
    if setup.cfg.method.name != method:
        raise ConfigError(
            f"train.config: it trains '{setup.cfg.method.name}', the study tunes '{method}'; use one method"
        )
    for m in set(setup.base.team()):
        if base.models.get(m) != setup.base.models[m]:
            raise ConfigError(
                f"train.config: model '{m}' is not the study's; train and evaluate on the same models (one engine pool)"
            )
    trainer = setup.trainer
    rk, pk = trainer.reward_keys(), trainer.tuned
    for p in space.params:
        if p.name not in rk and p.name not in pk:
            continue
        check = trainer.reward if p.name in rk else trainer.own
        for value in p.extremes():
            try:
                check(**{p.name: value})
            except (ValueError, TypeError) as e:
                what = "the reward" if p.name in rk else trainer.name
                raise ConfigError(
                    f"{space.source}: params.{p.name}: {what} refuses {value!r} ({one(e)}); narrow the range"
                ) from None
    rest = dataclasses.replace(
        space, params=tuple(p for p in space.params if p.name not in rk and p.name not in pk)
    )
    try:
        check_method(rest, method, fixed)
    except SpaceError as e:
        raise ConfigError(str(e)) from None
    return setup


def trial_training(training: TrainSetup, out: Path, params: dict[str, Any]) -> TrainSetup:
    """The trial's training: its params over the training config, in a directory named by them."""
    where = out / "trials" / stable_hash(params)
    return training.with_params(params, str(where))


def training_keys() -> set[str]:
    """What trained methods' spaces tune besides the router: every registered trainer's reward
    coefficients and the keys of its own section it lets a study tune."""
    return {k for t in TRAINERS.values() for k in (*t.reward_keys(), *t.tuned)}


def one(e: Exception) -> str:
    return str(e).splitlines()[0]


def router_args(params: dict[str, Any]) -> dict[str, Any]:
    """The params that are the router's arguments (not reward weights or training hyperparameters)."""
    keys = training_keys()
    return {k: v for k, v in params.items() if k not in keys}


def should_prune(spec: TrainSpec, curve: list[float], finished: list[list[float]]) -> bool:
    """The median rule on the training curve (see the module docstring)."""
    k = len(curve)
    if not spec.prune or k < spec.prune_warmup or len(finished) < spec.prune_startup_trials:
        return False
    window = lambda c: statistics.fmean(c[max(0, k - spec.prune_window) : k])  # noqa: E731
    others = [window(c) for c in finished if len(c) >= k]
    return len(others) >= spec.prune_startup_trials and window(curve) < statistics.median(others)


async def train_trial(
    spec: TrainSpec,
    training: TrainSetup,
    out: Path,
    trial: Trial,
    params: dict[str, Any],
    agents: dict[str, Agent],
    console: Console,
) -> str | None:
    """Train the trial's policy; its checkpoint's path, or None when the training curve was pruned.
    The trial's user attrs get the curve, the reward weights and the router's arguments."""
    from sweep.store.targets import own_dir
    from sweep.train import state
    from sweep.train.run import train_async

    setup = trial_training(training, out, params)
    from optuna.trial import TrialState

    done = trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    finished = [list(t.user_attrs[CURVE]) for t in done if CURVE in t.user_attrs]
    metric = spec.prune_metric

    def prune(history: list[dict[str, float]]) -> bool:
        return should_prune(spec, [h[metric] for h in history], finished)

    # The trial's own dir is owned as `sweep train` owns one: `sweep train --out` on it, or a second
    # driver handed the same params, is refused (a failed trial) instead of training beside it.
    lock = own_dir(setup.out, "train", setup.fingerprint())
    try:
        state.clean_temps(setup.out)  # a killed trial's temp files, as `sweep train` removes them
        outcome = await train_async(setup, agents, None, console, prune)
    finally:
        lock.release()
    trial.set_user_attr(CURVE, [h[metric] for h in outcome.history])
    trial.set_user_attr("reward", setup.cfg.reward)
    trial.set_user_attr("method_args", {**setup.cfg.method.args, "checkpoint": str(outcome.policy)})
    trial.set_user_attr("checkpoint", str(outcome.policy))
    if outcome.history and "activations" in outcome.history[-1]:  # why a silent trial is silent
        trial.set_user_attr(TRAIN_ACTIVATIONS, outcome.history[-1]["activations"])
    return str(outcome.policy) if len(outcome.history) >= setup.updates else None
