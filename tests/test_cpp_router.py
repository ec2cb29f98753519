"""The `cpp` router: what an agent keeps is what it sees (edges, and its own response hidden from its
prompt when pruned), decisions in the paper's order with their probabilities in the record, the
thresholded policy is deterministic, output caps on every round but the last (round 0 included), the
FuseGLU block as the spec writes it, and `random_prune` — all on the simulated backend, in-process."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
import torch

from actors.registry import build_backend
from data.benchmarks.registry import load_benchmark
from data.grading.graders import grader_for
from debate import prompts
from debate.cpp_reward import order
from debate.episode import Agent, run_episode
from debate.methods import build_method
from debate.policies import checkpoint as ckpt
from debate.policies.fuseglu import Fuse, build, weights_of
from debate.policies.pruning import PruningArch
from debate.routers.cpp import CppPolicyRouter, response_text
from debate.state import View


class Recording:
    """A backend that keeps every request it serves."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.requests = inner, []

    async def generate(self, requests: Any) -> Any:
        self.requests += list(requests)
        return await self.inner.generate(requests)


def team(verbosity: float = 0.0) -> tuple[list[Agent], list[Recording]]:
    rec = [
        Recording(build_backend("simulated", m, {"skill": s, "verbosity": verbosity}))
        for m, s in (("a", 0.8), ("b", 0.6), ("c", 0.4))
    ]
    return [Agent(m, r, price_in=1.0, price_out=4.0) for m, r in zip("abc", rec, strict=True)], rec


def episode(method: Any, agents: list[Agent], rounds: int = 2, item: int = 0) -> Any:
    sample = load_benchmark("arith", "test", limit=item + 1)[item]
    return asyncio.run(run_episode(method, agents, sample, grader_for(sample), 0, rounds, "arith"))


def test_what_an_agent_keeps_is_what_it_sees() -> None:
    agents, rec = team()
    res = episode(build_method("cpp", {"init_seed": 3}), agents)
    for r in (1, 2):
        decision = res.trajectory[r].decision
        keep = decision.record["keep"]
        for i in range(3):
            assert [row[0] for row in keep[i]] == list(order(i, 3))  # itself first, then by index
            kept = {j for j, take, p in keep[i] if take}
            assert set(decision.graph.sources(i)) == kept - {i}
            assert (i in decision.hidden_own) == (i not in kept)
            assert all(0.0 < p < 1.0 for _, _, p in keep[i])
            req = [q for q in rec[i].requests if q.hints["round"] == r][0]
            user = req.messages[-1].content
            assert (prompts.OWN_HIDDEN in user) == (i in decision.hidden_own)
            assert req.hints["own"] is None if i in decision.hidden_own else req.hints["own"] is not None
            assert sorted(req.hints["sources"]) == sorted(kept - {i})
        assert decision.record["mode"] == "threshold"


def test_the_thresholded_policy_is_deterministic_and_the_threshold_matters() -> None:
    a = episode(build_method("cpp", {"init_seed": 1}), team()[0])
    b = episode(build_method("cpp", {"init_seed": 1}), team()[0])
    assert [t.text for t in a.turns] == [t.text for t in b.turns]
    low = episode(build_method("cpp", {"init_seed": 1, "threshold": 0.01}), team()[0])
    assert low.trajectory[1].decision.record["kept_edges"] == 9  # every p > 0.01: everything kept
    assert not low.trajectory[1].decision.hidden_own


def _arch_with_lengths(tmp_path: Any, lengths: tuple[tuple[int, ...], ...]) -> str:
    arch = PruningArch(3, hidden=16, seat_models=("a", "b", "c"), output_lengths=lengths)
    net = build(arch, 0)
    path = tmp_path / "p.npz"
    ckpt.save_checkpoint(path, arch.to_dict(), weights_of(net), {"test": True})
    return str(path)


def test_truncation_caps_every_round_but_the_last_at_the_seats_quantiles(tmp_path: Any) -> None:
    ref = _arch_with_lengths(tmp_path, ((10, 20, 30, 40), (100, 200, 300, 400), (7, 7, 7, 7)))
    agents, rec = team(verbosity=8.0)
    res = episode(build_method("cpp", {"checkpoint": ref, "truncate": 0.5}), agents, rounds=3)
    caps = {0: 25, 1: 250, 2: 7}  # the medians, rounded up
    for i, r in enumerate(rec):
        by_round = {q.hints["round"]: q.max_tokens for q in r.requests}
        assert by_round == {0: caps[i], 1: caps[i], 2: caps[i], 3: 512}
    assert res.trajectory[0].decision.max_tokens == caps and res.trajectory[3].decision.max_tokens is None
    assert any(t.completion_tokens <= 7 for t in res.turns if t.agent == 2 and t.round == 0)


def test_ids_hash_the_checkpoint_content(tmp_path: Any) -> None:
    ref = _arch_with_lengths(tmp_path, ())
    spec = build_method("cpp", {"checkpoint": ref}).spec
    assert dict(spec.identity()["args"])["checkpoint"].startswith("sha:")
    with pytest.raises(ValueError, match="protocol 'update'"):
        build_method("cpp", {"protocol": "critique_revise"})
    with pytest.raises(ValueError, match="truncate must be"):
        build_method("cpp", {"truncate": 1.5})


def test_an_untrained_policy_refuses_truncation() -> None:
    with pytest.raises(ValueError, match="validation output lengths"):
        episode(build_method("cpp", {"truncate": 0.9}), team()[0])


def test_the_training_router_samples_with_the_episode_rng() -> None:
    params = build_method("cpp").router
    from debate.policies.fuseglu import pruner_for

    policy = pruner_for("", 0, "hashed", 3)
    method = build_method("cpp")
    import dataclasses

    sampled = dataclasses.replace(method, router=CppPolicyRouter(params, policy, sample=True))  # type: ignore[arg-type]
    a, b = episode(sampled, team()[0]), episode(sampled, team()[0])
    assert a.trajectory[1].decision.record["keep"] == b.trajectory[1].decision.record["keep"]
    assert a.trajectory[1].decision.record["mode"] == "sample"
    q = np.asarray(a.trajectory[1].decision.record["_queries"])
    assert q.shape == (3, 3, 384) and "_queries" not in a.trajectory[1].decision.row()["decision"]


def test_fuse_is_the_papers_equation_1() -> None:
    torch.manual_seed(0)
    block = Fuse(8, 5)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    silu, ln = torch.nn.functional.silu, torch.nn.functional.layer_norm
    xn, yn = ln(x, (8,)), ln(y, (8,))  # the fresh LayerNorms are the identity affine
    want = ln(xn + silu(block.w_d(silu(block.w_g(xn + yn)) * block.w_u(yn))), (8,))
    torch.testing.assert_close(block(x, y), want)


def test_random_prune_keeps_about_p_and_hides_pruned_own_responses() -> None:
    agents, _ = team()
    kept, hidden = 0, 0
    for item in range(12):
        res = episode(build_method("random_prune", {"p": 0.5}), agents, item=item)
        for rec in res.trajectory[1:]:
            kept += sum(take for row in rec.decision.record["keep"] for _, take, _ in row)
            hidden += len(rec.decision.hidden_own)
            for i, row in enumerate(rec.decision.record["keep"]):
                assert (not row[0][1]) == (i in rec.decision.hidden_own)
    assert 0.35 < kept / (12 * 2 * 9) < 0.65 and hidden > 0


def test_the_response_text_is_what_the_prompt_shows() -> None:
    view = View("42", 4, "Because six times seven.")
    text = response_text(view, 1)
    assert text.startswith("Agent 2\n") and "Answer: 42" in text and "Confidence: 4" in text
