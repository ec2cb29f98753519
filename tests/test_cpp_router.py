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


# --- the paper's main method: no seat tell, per-seat truncation (issue 32) ---


class Spy:
    """A hashed encoder that keeps every text it embeds."""

    def __init__(self) -> None:
        from actors.encoders import HashedEncoder

        self.inner, self.texts = HashedEncoder(), []
        self.name, self.dim = "hashed", 384

    async def embed(self, texts: Any) -> Any:
        self.texts += list(texts)
        return await self.inner.embed(texts)


def test_without_the_author_tag_the_policy_reads_no_seat() -> None:
    from debate.encoders import set_provider

    view = View("42", 4, "Because six times seven.")
    assert (
        response_text(view, 1, tag=False) == "Answer: 42\nConfidence: 4\nReasoning: Because six times seven."
    )
    for tag, headed in ((False, False), (None, True), (True, True)):
        spy = Spy()
        previous = set_provider(lambda name, s=spy: s)
        try:
            episode(build_method("cpp", {"init_seed": 3, "author_tag": tag}), team()[0])
        finally:
            set_provider(previous)
        responses = [t for t in spy.texts if "\nConfidence: " in t and "\n\n" not in t]
        assert responses and all(t.startswith("Agent ") == headed for t in responses), tag


def test_a_checkpoint_carries_its_author_tag_and_a_contradicting_argument_is_refused(tmp_path: Any) -> None:
    tagged = PruningArch(3, hidden=16)
    assert "author_tag" not in tagged.to_dict()  # the default: checkpoints' bytes as before the option
    untagged = PruningArch(3, hidden=16, author_tag=False)
    assert PruningArch.from_dict(untagged.to_dict()) == untagged
    path = tmp_path / "untagged.npz"
    ckpt.save_checkpoint(path, untagged.to_dict(), weights_of(build(untagged, 0)), {"test": True})
    assert build_method("cpp", {"checkpoint": str(path)}).router.pruner(3).arch.author_tag is False
    assert build_method("cpp", {"checkpoint": str(path), "author_tag": False}).router.pruner(3)
    with pytest.raises(ValueError, match="author_tag false; set author_tag to that or leave it out"):
        build_method("cpp", {"checkpoint": str(path), "author_tag": True}).router.pruner(3)
    with pytest.raises(ValueError, match="author_tag must be true, false or null"):
        build_method("cpp", {"author_tag": 1})


def test_the_added_arguments_leave_old_ids_alone() -> None:
    old = dict(build_method("cpp").spec.identity()["args"])
    assert "author_tag" not in old and "truncate_seats" not in old
    same = build_method("cpp", {"author_tag": None, "truncate_seats": ""}).spec.identity()
    assert dict(same["args"]) == old
    assert dict(build_method("cpp", {"author_tag": False}).spec.identity()["args"])["author_tag"] is False
    assert "truncate_seats" in dict(
        build_method("cpp", {"truncate_seats": "0.5/0.5/0.5"}).spec.identity()["args"]
    )


def test_truncate_seats_caps_each_seat_at_its_own_quantile(tmp_path: Any) -> None:
    ref = _arch_with_lengths(tmp_path, ((10, 20, 30, 40), (100, 200, 300, 400), (7, 7, 7, 7)))
    agents, rec = team(verbosity=8.0)
    res = episode(build_method("cpp", {"checkpoint": ref, "truncate_seats": "1/0.5/0.5"}), agents, rounds=2)
    caps = {0: 40, 1: 250, 2: 7}  # seat 0 at its maximum, the others at their medians
    for i, r in enumerate(rec):
        assert {q.hints["round"]: q.max_tokens for q in r.requests} == {0: caps[i], 1: caps[i], 2: 512}
    assert res.trajectory[0].decision.record["truncate"] == "1/0.5/0.5"
    with pytest.raises(ValueError, match="2 truncation quantiles for 3 seats"):
        episode(build_method("cpp", {"checkpoint": ref, "truncate_seats": "0.5/0.5"}), team()[0])


@pytest.mark.parametrize(
    "args, message",
    [
        ({"truncate_seats": "0.85/x/0.95"}, "truncate_seats must be one quantile in \\(0, 1\\] per seat"),
        ({"truncate_seats": "0.85/1.5/0.95"}, "truncate_seats must be"),
        ({"truncate_seats": "0/0.5/0.5"}, "truncate_seats must be"),
        ({"truncate_seats": "0.5/0.5/0.5", "truncate": 0.9}, "not both"),
    ],
)
def test_bad_truncate_seats_are_one_line_errors(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as e:
        build_method("cpp", args)
    assert "\n" not in str(e.value)
