"""The search space of a calibration: which numbers of a population (`actors.populations`) the fit
chooses, their bounds, and the population a set of values makes.

Fitted, per member: its skill logit and (model v4) its `spread` on each benchmark (the targets'
dataset *names*, e.g. math500), and its `calibration` (how well its stated confidence tells right
from wrong: it breaks the ties of small votes, so consistency at n = 2 pins it) and (model v5) its
`self_knowledge` (how far a confidence follows the sample's own correctness rather than how easy the
item feels: with calibration it sets how much n = 2 gains on one sample) and (model v6) its `habit`
(how often its wrong samples repeat one answer of its own: how little its votes gain over one
sample) and (model v7) its `insight` (what reading peers adds to its competence: how much debate
gains beyond a vote) and (model v8) its `echo` (how often a first answer repeats its modal answer on
the item: how much its samples agree beyond their competence; from model v9 on each benchmark, as
its vote may gain nothing on one benchmark and much on another); per benchmark: `item_spread` and
`misconception`; the dynamics' `persuasion`, `mislead`, `stubbornness`, `reflect`, `context_cost` and
(model v3) `verify`.
Not fitted: prices and token figures (the targets give them), the other dynamics. A targets file's
`order` (members, best first) sorts those members' skills on each benchmark: the search moves freely,
and the population it makes keeps the order.
`default` entries (the benchmark every other dataset falls back to) are the mean of the fitted ones."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.distributions import FloatDistribution

from actors.population import VERSION
from actors.populations import MEMBER_SINCE, PER_BENCH, SINCE, Bench, Dynamics, Member, Population
from sweep.calibrate.targets import Targets

# Wide enough for the fits to reach: v7's PEAR fit left a skill at -3, the old bound, and a vote that
# gains nothing on one sample asks for a spread past 3 (with a skill raised to keep one sample's level).
SKILL = (-5.0, 5.0)
SPREAD = (0.1, 5.0)
BENCH = {"item_spread": (0.0, 3.0), "misconception": (0.0, 0.9)}
DYNAMICS = {
    "persuasion": (0.0, 1.0),
    "mislead": (0.0, 1.0),
    "stubbornness": (0.0, 0.9),
    "reflect": (0.0, 0.8),
    "context_cost": (0.0, 0.6),
    "verify": (0.0, 1.0),  # read from population model v3 on
}
CALIBRATION_RANGE = (0.0, 1.0)  # verbal confidence: how far it tells right from wrong (ties in votes)
# A member's fields that later population models added (`MEMBER_SINCE` says which version reads
# each): its range, and where a search starts it on a file whose model lacks it. Habit, insight and
# echo start at 0, which replies as the older model; self-knowledge, which has no such value, in its
# middle.
VERSIONED = {
    "self_knowledge": ((0.0, 1.0), 0.5),  # v5: a confidence follows its own sample, not the item
    "habit": ((0.0, 1.0), 0.0),  # v6: a member's wrong samples repeat one answer of its own
    "insight": ((0.0, 3.0), 0.0),  # v7: the logit a reader gains from peers' work
    "echo": ((0.0, 1.0), 0.0),  # v8: a first answer repeats the member's modal one on the item
}


def by_benchmark(field: str) -> bool:
    """Whether the newest model reads a member's `field` once per benchmark (`PER_BENCH`)."""
    return PER_BENCH.get(field, "v99") <= VERSION


NEAR = 0.08  # a fit searches 8 % of each parameter's range either side of its start (a local search)
DIGITS = 4  # values are rounded: the population file reads well, and what ran is what is written


def benchmarks(targets: Targets) -> list[str]:
    """The benchmark names the targets' datasets use, in file order, once each."""
    return list(dict.fromkeys(str(entry["name"]) for entry in targets.datasets.values()))


def space(targets: Targets, around: Mapping[str, float] | None = None) -> dict[str, FloatDistribution]:
    """Parameter name -> its distribution, in a fixed order. `around`: each range narrowed to
    `NEAR` of its width either side of that start (a local search: CMA-ES starts at the middle)."""
    out: dict[str, tuple[float, float]] = {}
    benches = benchmarks(targets)
    for m in targets.members:
        out |= {f"skill.{m}.{b}": SKILL for b in benches}
        out |= {f"spread.{m}.{b}": SPREAD for b in benches}
        out[f"calibration.{m}"] = CALIBRATION_RANGE
        for f, (bounds, _) in VERSIONED.items():
            if MEMBER_SINCE[f] <= VERSION:
                out |= {f"{f}.{m}.{b}": bounds for b in benches} if by_benchmark(f) else {f"{f}.{m}": bounds}
    for b in benches:
        out |= {f"{k}.{b}": bounds for k, bounds in BENCH.items()}
    out |= {f"dynamics.{k}": bounds for k, bounds in DYNAMICS.items()}
    if around is not None:
        out = {
            k: (max(low, around[k] - NEAR * (high - low)), min(high, around[k] + NEAR * (high - low)))
            for k, (low, high) in out.items()
        }
    return {k: FloatDistribution(low, high) for k, (low, high) in out.items()}


def suggest(trial: optuna.Trial, targets: Targets, around: Mapping[str, float] | None = None) -> Population:
    """The population trial `trial` draws (from the space narrowed `around` a start, when given)."""
    values = {k: trial.suggest_float(k, d.low, d.high) for k, d in space(targets, around).items()}
    return population_of(values, targets)


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), DIGITS)


def population_of(values: Mapping[str, float], targets: Targets, description: str = "") -> Population:
    """The population that `values` (every parameter of `space`) make for `targets`."""
    v = {k: round(float(x), DIGITS) for k, x in values.items()}
    benches = benchmarks(targets)
    for b in benches:  # the declared order: the ordered members' skills, sorted best first
        keys = [f"skill.{m}.{b}" for m in targets.order]
        for key, x in zip(keys, sorted((v[k] for k in keys), reverse=True), strict=True):
            v[key] = x
    members = {}
    for m, spec in targets.members.items():
        skill = {b: v[f"skill.{m}.{b}"] for b in benches}
        spread = {b: v[f"spread.{m}.{b}"] for b in benches}
        versioned: dict[str, Any] = {f: v.get(f"{f}.{m}", getattr(Member, f)) for f in VERSIONED}
        for f in filter(by_benchmark, VERSIONED):
            each = {b: v[f"{f}.{m}.{b}"] for b in benches}
            versioned[f] = {"default": _mean(list(each.values())), **each}
        members[m] = Member(
            skill={"default": _mean(list(skill.values())), **skill},
            spread={"default": _mean(list(spread.values())), **spread},
            calibration=v[f"calibration.{m}"],
            **versioned,
            # Token figures the targets lack keep the model's defaults (`actors.populations.Member`).
            tokens_median=int(spec.get("tokens_median") or Member.tokens_median),
            tokens_q95=int(spec.get("tokens_q95") or max(Member.tokens_q95, spec.get("tokens_median") or 0)),
        )
    per_bench = {b: Bench(**{k: v[f"{k}.{b}"] for k in BENCH}) for b in benches}
    dynamics: dict[str, Any] = {k: v[f"dynamics.{k}"] for k in DYNAMICS}  # the others keep their defaults
    default = Bench(**{k: _mean([v[f"{k}.{b}"] for b in benches]) for k in BENCH})
    return Population(
        name=targets.population,
        version=VERSION,
        members=members,
        benchmarks={"default": default, **per_bench},
        dynamics=Dynamics(**dynamics),
        description=description,
    )


def values_of(population: Population, targets: Targets) -> dict[str, float]:
    """The parameters of `population` in `space(targets)`, clipped to the bounds (a member or
    benchmark the population lacks takes its `default`; a parameter its model version lacks, the
    middle of its range, except those `VERSIONED` gives a start), e.g. to start a search from a
    population."""
    dyn = population.dynamics
    raw: dict[str, float] = {f"dynamics.{k}": float(getattr(dyn, k)) for k in DYNAMICS}
    for key, since in SINCE.items():  # a parameter an older population's model lacks: the middle
        if population.version < since and key in DYNAMICS:
            raw[f"dynamics.{key}"] = sum(DYNAMICS[key]) / 2
    fallback = next(iter(population.members.values()))
    for m in targets.members:
        member = population.members.get(m, fallback)
        raw |= {f"skill.{m}.{b}": member.skill_on(b) for b in benchmarks(targets)}
        raw |= {f"spread.{m}.{b}": member.spread_on(b) for b in benchmarks(targets)}
        raw[f"calibration.{m}"] = member.calibration
        for f, (_, start) in VERSIONED.items():
            old = population.version < MEMBER_SINCE[f]
            if by_benchmark(f):  # one number an older file gives holds on every benchmark
                raw |= {
                    f"{f}.{m}.{b}": start if old else getattr(member, f"{f}_on")(b)
                    for b in benchmarks(targets)
                }
            else:
                raw[f"{f}.{m}"] = start if old else getattr(member, f)
    for b in benchmarks(targets):
        raw |= {f"{k}.{b}": float(getattr(population.bench(b), k)) for k in BENCH}
    return {k: min(max(raw[k], d.low), d.high) for k, d in space(targets).items()}


def start_values(targets: Targets) -> dict[str, float]:
    """A first trial read off the fit rows alone: every parameter at the middle of its range, except
    each member's skill, set so that its single-agent row comes out right at the middle spreads (a
    logit-normal's mean is about sigmoid(mu / sqrt(1 + pi s^2 / 8))); the fit then refines it."""
    values = {k: (d.low + d.high) / 2 for k, d in space(targets).items()}
    names = {key: str(entry["name"]) for key, entry in targets.datasets.items()}
    for row in targets.fit_rows():
        solo = row.method.get("name") == "cot" and len(row.agents) == 1
        if not solo or f"skill.{row.agents[0]}.{names[row.dataset]}" not in values:
            continue
        m, b = row.agents[0], names[row.dataset]
        sd2 = values[f"spread.{m}.{b}"] ** 2 + values[f"item_spread.{b}"] ** 2
        p = min(0.99, max(0.01, row.acc / 100))
        low, high = SKILL
        values[f"skill.{m}.{b}"] = min(
            high, max(low, math.log(p / (1 - p)) * math.sqrt(1 + math.pi * sd2 / 8))
        )
    return values
