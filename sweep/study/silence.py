"""Which trials of a study that trains ended silent, and why: a trial whose evaluation made no call
after round 0 (calls per task = the team's size) evaluated a router that never let anyone speak —
round 0's vote at round 0's cost. Such a trial is cheap, so it often sits on the Pareto front; a
study's report says how many there were, whether one is on the front, and the likely cause of each,
read from its training: silent rollouts too (the reward made silence pay), or rollouts that spoke
while the evaluated policy, acting by its mean or mode, stays under `theta_act`."""

from __future__ import annotations

from typing import Any

TRAIN_ACTIVATIONS = "train_activations"  # the trial user attr: activations per episode, last update


def is_silent(trial: Any, team_size: int) -> bool:
    """Whether a complete trial's evaluation made no call after round 0."""
    calls = trial.user_attrs.get("metrics", {}).get("calls_per_task")
    return calls is not None and calls <= team_size


def why_silent(trial: Any) -> str:
    """The likely cause of a silent trial, from what its training recorded."""
    sampled = trial.user_attrs.get(TRAIN_ACTIVATIONS)
    reward = trial.user_attrs.get("reward", {})
    theta = trial.user_attrs.get("method_args", {}).get("theta_act", trial.params.get("theta_act"))
    theta = f"{theta:.3g}" if isinstance(theta, float) else theta
    if sampled is None:
        return "no training record (a trial that did not train)"
    if sampled < 0.5:
        bonus = reward.get("beta_efficiency")
        paid = f", beta_efficiency {bonus:.3g} pays for unused budget" if bonus else ""
        return f"its training rollouts were silent too ({sampled:.1f} activations per episode): the reward made silence pay{paid}"
    return (
        f"its training rollouts spoke ({sampled:.1f} activations per episode, sampled) but the evaluated "
        f"policy stays under theta_act {theta}: evaluation acts by the distribution's mean or mode"
    )


def silence_notes(trials: list[Any], best: list[Any], team_size: int) -> list[str]:
    """One line on how many complete trials ended silent and whether silence is on the Pareto front
    (or is the best trial), then a line per silent trial with its likely cause."""
    complete = [t for t in trials if t.state.name == "COMPLETE" and t.values]
    silent = [t for t in complete if is_silent(t, team_size)]
    if not complete:
        return []
    if not silent:
        return [f"silent trials: none of {len(complete)} complete trials ended silent"]
    front = {t.number for t in best}
    on_front = [t.number for t in silent if t.number in front]
    where = (
        f"silence is on the Pareto front (trial {', '.join(map(str, on_front))})"
        if on_front
        else "none of them is on the Pareto front"
    )
    lines = [f"silent trials: {len(silent)} of {len(complete)} complete trials ended silent; {where}"]
    lines += [f"  trial {t.number}: {why_silent(t)}" for t in silent]
    return lines
