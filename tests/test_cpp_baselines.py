"""Heterogeneous baselines (vote; consistency fuse / best / homogeneous, m matched to a measured cost),
adversarial seats (the prompt with the gold, the simulated behaviour, episode ids that tell them
apart), simulated verbosity (the same answers, longer replies) and the sentence encoders."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
import pytest

from actors.encoders import CachedEncoder, HashedEncoder, build_encoder
from actors.registry import build_backend
from data.benchmarks.registry import load_benchmark
from data.grading.graders import grader_for
from debate import prompts
from debate.adversary import adversarial_messages
from debate.baselines import matched_m, sample_costs, strongest
from debate.episode import Agent, run_episode
from debate.methods import build_method
from sweep.config.sweep import ConfigError, validate
from sweep.run.plan import build_plan

KEYS = [("a", False), ("b", False), ("c", False), ("b", False)]


def test_vote_asks_each_distinct_seat_once() -> None:
    assert build_method("vote").seat_indices(KEYS) == [0, 1, 2]
    assert build_method("vote").seat_indices([("a", False), ("a", True)]) == [
        0,
        1,
    ]  # the adversary is its own seat


def test_consistency_pools() -> None:
    assert build_method("consistency", {"m": 5, "pool": "fuse"}).seat_indices(KEYS) == [0, 1, 2, 0, 1]
    assert build_method("consistency", {"m": 3, "pool": "b"}).seat_indices(KEYS) == [1, 3, 1]
    with pytest.raises(ValueError, match="not a model of the team"):
        build_method("consistency", {"pool": "z"}).seat_indices(KEYS)
    with pytest.raises(ValueError, match="settled from measured episodes"):
        build_method("consistency", {"pool": "best"}).seat_indices(KEYS)


def test_m_is_matched_to_the_nearest_cost() -> None:
    costs = [3.0, 1.0, 0.5]
    assert sample_costs(costs, [0, 1, 2], 4) == [3.0, 4.0, 4.5, 7.5]
    assert matched_m(costs, [0, 1, 2], 7.0) == 4  # 7.5 is nearer than 4.5
    assert matched_m(costs, [0, 1, 2], 6.0) == 4  # a tie (4.5 / 7.5): more samples
    assert matched_m(costs, [1], 10.2) == 10
    assert strongest({"a": 0.5, "b": 0.7, "c": 0.7}) == "b"


def _team(adversarial: bool = False, verbosity: float = 0.0) -> list[Agent]:
    return [
        Agent(
            m,
            build_backend("simulated", m, {"skill": s, "verbosity": verbosity}),
            adversarial=(adversarial and m == "b"),
        )
        for m, s in (("a", 0.9), ("b", 0.9), ("c", 0.9))
    ]


def _run(method: Any, team: list[Agent], n: int = 8) -> list[Any]:
    items = load_benchmark("arith", "test", limit=n)

    async def go() -> list[Any]:
        return await asyncio.gather(
            *(run_episode(method, team, s, grader_for(s), 0, 2, "arith") for s in items)
        )

    return asyncio.run(go())


def test_an_adversarial_seat_is_told_the_gold_and_argues_for_a_wrong_answer() -> None:
    sample = load_benchmark("arith", "test", limit=1)[0]
    messages = prompts.initial_messages(sample, 1)
    adv = adversarial_messages(messages, sample)
    assert sample.gold in adv[0].content and "wrong answer" in adv[0].content
    assert adv[1:] == messages[1:] and adv[0].content.startswith(messages[0].content)
    honest, hostile = (
        _run(build_method("fixed"), _team()),
        _run(build_method("fixed"), _team(adversarial=True)),
    )
    for res in hostile:
        assert all(
            t.answer != res.state.views[0][0].answer or not res.trajectory[0].correct_after[0]
            for t in res.turns
            if t.agent == 1
        )
        assert not any(res.trajectory[r].correct_after[1] for r in range(3))  # never right
    assert sum(r.correct for r in hostile) < sum(r.correct for r in honest)
    # the honest seats' round-0 replies are the same calls either way
    assert [t.text for r in honest for t in r.turns if t.round == 0 and t.agent != 1] == [
        t.text for r in hostile for t in r.turns if t.round == 0 and t.agent != 1
    ]


def test_adversarial_seats_change_episode_ids_only_where_they_sit() -> None:
    raw: dict[str, Any] = {
        "models": {"a": {"engine": "simulated"}, "b": {"engine": "simulated"}},
        "agents": ["a", "b", "a"], "datasets": [{"name": "arith", "limit": 2}], "methods": ["fixed", "vote"],
    }  # fmt: skip
    honest = build_plan(validate(raw))
    raw["agents"] = ["a", {"model": "b", "adversarial": True}, "a"]
    hostile = build_plan(validate(raw))
    assert not {t.episode_id for t in honest.tasks} & {t.episode_id for t in hostile.tasks}
    assert hostile.groups[0].adversarial == frozenset({1}) and hostile.groups[1].method_spec[
        "adversarial"
    ] == [1]
    assert "adversarial" not in honest.groups[0].method_spec


def test_verbosity_lengthens_replies_and_keeps_answers() -> None:
    short, long = _run(build_method("fixed"), _team()), _run(build_method("fixed"), _team(verbosity=10.0))
    assert [t.answer for r in short for t in r.turns] == [t.answer for r in long for t in r.turns]
    assert sum(t.completion_tokens for r in long for t in r.turns) > 3 * sum(
        t.completion_tokens for r in short for t in r.turns
    )


def test_the_hashed_encoder_is_deterministic_unit_and_content_sensitive() -> None:
    enc = HashedEncoder(64)
    a, b, c = asyncio.run(enc.embed(["the answer is 42", "the answer is 42", "a cat sat on the mat"]))
    assert np.array_equal(a, b) and abs(float(np.linalg.norm(a)) - 1) < 1e-6
    assert float(a @ c) < float(a @ b)
    cached = CachedEncoder(HashedEncoder(64))
    asyncio.run(cached.embed(["x", "y", "x"]))
    asyncio.run(cached.embed(["x"]))
    assert (cached.misses, cached.hits) == (2, 2)
    with pytest.raises(ValueError, match="unknown encoder"):
        build_encoder("word2vec")


@pytest.mark.slow
def test_minilm_embeds_offline_and_sees_meaning() -> None:
    enc = build_encoder("minilm")
    v = asyncio.run(
        enc.embed(
            ["The answer is 42.", "I conclude the result is forty-two.", "Paris is the capital of France."]
        )
    )
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-4)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])


def test_honest_seats_leave_sweep_ids_as_they_were() -> None:
    raw: dict[str, Any] = {"models": {"a": {"engine": "simulated"}}, "agents": ["a", {"model": "a", "count": 2}],
                           "datasets": [{"name": "arith"}], "methods": ["cot"]}  # fmt: skip
    cfg = validate(raw)
    assert cfg.model_dump()["agents"] == [{"model": "a", "count": 1}, {"model": "a", "count": 2}]
    assert cfg.identity() == "271f1df2dd3a1859"  # the id this config had before seats could be adversarial
    raw["agents"][0] = {"model": "a", "adversarial": True}
    assert validate(raw).model_dump()["agents"][0]["adversarial"] is True


def test_a_config_gives_verbosity_and_its_range_is_checked_before_anything_runs() -> None:
    raw: dict[str, Any] = {"models": {"a": {"engine": "simulated", "args": {"verbosity": 6}}}, "agents": ["a"],
                           "datasets": [{"name": "arith"}], "methods": ["cot"]}  # fmt: skip
    assert validate(raw).models["a"].args == {"verbosity": 6}
    raw["models"]["a"]["args"]["verbosity"] = -1
    with pytest.raises(ConfigError, match=r"args\.verbosity: must be in \[0, 100\]"):
        validate(raw)


@pytest.mark.ray
def test_sweep_run_settles_a_cost_matched_consistency_in_one_owned_output_dir(
    tmp_path: Any, ray_driver: Any
) -> None:
    """`sweep run` runs the matched method first, then the settled consistency entry, in the same
    output dir under the one lock it took (a second lock would refuse the dir to itself)."""
    import polars as pl
    import yaml

    from sweep.cli import main

    sweep = {"models": {"a": {"engine": "simulated", "price_in": 1.0, "price_out": 4.0}}, "agents": ["a", "a", "a"],
             "datasets": [{"name": "arith", "limit": 3}], "rounds": 2, "output_dir": str(tmp_path / "out"),
             "methods": ["fixed", {"name": "consistency", "args": {"match": "fixed"}}]}  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sweep))
    assert main(["run", str(tmp_path / "s.yaml"), "--no-tracking", "--address", ray_driver.address]) == 0
    ep = pl.read_parquet(tmp_path / "out" / "episodes" / "*.parquet")
    assert sorted(ep["method"].unique().to_list()) == ["consistency", "fixed"] and ep.height == 6
    args = json.loads(ep.filter(pl.col("method") == "consistency")["method_spec"][0])["args"]
    assert args["match"] == "" and args["m"] >= 1  # settled: a plain consistency with its own m
