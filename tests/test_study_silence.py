"""A study that trains says how many of its trials ended silent (no call after round 0), whether
silence is on the Pareto front, and each one's likely cause (`sweep.study.silence`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sweep.study.silence import is_silent, silence_notes, why_silent


def trial(number: int, calls: float, sampled: float | None, **attrs: Any) -> SimpleNamespace:
    user = {"metrics": {"calls_per_task": calls}, "reward": {"beta_efficiency": 0.3}, **attrs}
    if sampled is not None:
        user["train_activations"] = sampled
    return SimpleNamespace(
        number=number,
        state=SimpleNamespace(name="COMPLETE"),
        values=[0.5, 1000.0],
        params={"theta_act": 0.6},
        user_attrs=user,
    )


def test_a_trial_is_silent_when_it_made_no_call_after_round_0() -> None:
    assert is_silent(trial(0, 6.0, 0.0), 6) and not is_silent(trial(0, 6.5, 0.0), 6)
    assert not is_silent(SimpleNamespace(user_attrs={}), 6)  # no evaluation: not known to be silent


def test_each_silent_trial_names_its_likely_cause() -> None:
    assert "silent too (0.0 activations" in why_silent(trial(0, 6, 0.0))
    assert "beta_efficiency 0.3 pays for unused budget" in why_silent(trial(0, 6, 0.2))
    spoke = why_silent(trial(0, 6, 7.5, method_args={"theta_act": 0.5512345}))
    assert "rollouts spoke (7.5 activations" in spoke and "theta_act 0.55" in spoke
    assert "did not train" in why_silent(trial(0, 6, None))


def test_the_notes_count_silent_trials_and_say_whether_silence_is_on_the_front() -> None:
    a, b, c = trial(0, 6, 0.0), trial(1, 6, 4.0), trial(2, 14, 9.0)
    lines = silence_notes([a, b, c], [b, c], 6)
    assert (
        lines[0]
        == "silent trials: 2 of 3 complete trials ended silent; silence is on the Pareto front (trial 1)"
    )
    assert lines[1].startswith("  trial 0: its training rollouts were silent too") and len(lines) == 3
    off = silence_notes([a, c], [c], 6)
    assert off[0].endswith("none of them is on the Pareto front")
    assert silence_notes([c], [c], 6) == ["silent trials: none of 1 complete trials ended silent"]
    pruned = SimpleNamespace(number=3, state=SimpleNamespace(name="PRUNED"), values=None, user_attrs={})
    assert silence_notes([pruned], [], 6) == []
