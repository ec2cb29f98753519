"""The samplers and pruners a study config may name (`sampler: {name, args}`, `pruner: {name, args}`):
Optuna's, built lazily so that validating a config imports no Optuna."""

from __future__ import annotations

from typing import Any

from debate.spec import Factories

SAMPLERS: Factories[Any] = Factories("sampler")
PRUNERS: Factories[Any] = Factories("pruner")


@SAMPLERS.register("tpe")
def tpe(
    seed: int | None = 0,
    n_startup_trials: int = 10,
    n_ei_candidates: int = 24,
    multivariate: bool | None = None,
    group: bool = False,
    constant_liar: bool = True,  # trials run in flight at once: keep them from piling on one point
) -> Any:
    """Optuna's TPESampler (single- and multi-objective); the default."""
    kwargs = dict(locals())  # before the import below adds a local
    import optuna

    return optuna.samplers.TPESampler(**kwargs)


@SAMPLERS.register("nsga2")
def nsga2(
    seed: int | None = 0, population_size: int = 20, crossover_prob: float = 0.9, swapping_prob: float = 0.5
) -> Any:
    """Optuna's NSGAIISampler: multi-objective (Pareto) search."""
    kwargs = dict(locals())
    import optuna

    return optuna.samplers.NSGAIISampler(**kwargs)


@SAMPLERS.register("cmaes")
def cmaes(
    seed: int | None = 0,
    n_startup_trials: int = 1,
    sigma0: float | None = None,
    with_margin: bool = False,
    warn_independent_sampling: bool = False,  # categoricals fall back to random sampling by design
) -> Any:
    """Optuna's CmaEsSampler (single objective; needs the `cmaes` package)."""
    kwargs = dict(locals())
    import optuna

    return optuna.samplers.CmaEsSampler(**kwargs)


@SAMPLERS.register("random")
def random_sampler(seed: int | None = 0) -> Any:
    """Optuna's RandomSampler: a baseline for the others."""
    import optuna

    return optuna.samplers.RandomSampler(seed=seed)


@PRUNERS.register("wilcoxon")
def wilcoxon(p_threshold: float = 0.1, n_startup_steps: int = 2) -> Any:
    """Optuna's WilcoxonPruner over per-episode correctness (one step per episode of the trial)."""
    import warnings

    import optuna

    with warnings.catch_warnings():  # "experimental since 3.6": said once here, not on every run
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.pruners.WilcoxonPruner(p_threshold=p_threshold, n_startup_steps=n_startup_steps)


@PRUNERS.register("median")
def median(n_startup_trials: int = 5, n_warmup_steps: int = 0) -> Any:
    """Optuna's MedianPruner over the per-episode correctness steps."""
    import optuna

    return optuna.pruners.MedianPruner(n_startup_trials=n_startup_trials, n_warmup_steps=n_warmup_steps)
