"""CPP's confidence cues (ours, off by default): `cpp.confidence_cues`, a learned keep bias per cell
of what `confidence_keep` reads (own response or a peer's, same answer as the reader's or not, the
reader's and the author's stated confidence). Off, trainings and checkpoints are what they were; on,
an untrained network keeps as the one without, the batch carries each decision's cues, and a policy
learns a confidence rule where the response texts cannot tell it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest
import torch

from debate.cpp_reward import order
from debate.policies import checkpoint as ckpt
from debate.policies.fuseglu import PruningNet, build, pruner_for
from debate.policies.pruning import CUES, PruningArch, cues_of
from sweep.train import pg
from sweep.train.config import TrainSetup, load_train
from sweep.train.pg_config import PGConfig
from sweep.train.pg_update import Actions, pg_update
from tests.test_train_cpp import agents_for, run, write


def test_off_keeps_every_fingerprint_and_checkpoint_arch_as_before(tmp_path: Path) -> None:
    plain = load_train(write(tmp_path))
    assert plain.fingerprint() == load_train(write(tmp_path), ["cpp.confidence_cues=false"]).fingerprint()
    assert plain.fingerprint() != load_train(write(tmp_path), ["cpp.confidence_cues=true"]).fingerprint()
    assert "confidence_cues" not in PruningArch(3).to_dict()
    assert PruningArch.from_dict(PruningArch(3, confidence_cues=True).to_dict()).confidence_cues is True
    with pytest.raises(ValueError, match="confidence_cues must be true or false"):
        PruningArch(3, confidence_cues=1)  # type: ignore[arg-type]


def test_the_cues_are_what_confidence_keep_reads() -> None:
    conf, answers = (5, 2, 0, 9), ("7", "7", None, "8")
    assert cues_of(0, 0, conf, answers) == (1, 1, 5, 5)  # one's own response: the same answer
    assert cues_of(0, 1, conf, answers) == (0, 1, 5, 2)
    assert cues_of(1, 3, conf, answers) == (0, 0, 2, 5)  # confidences clipped to 0..5
    assert cues_of(2, 0, conf, answers) == (0, 0, 0, 5)  # no answer agrees with nothing


def test_an_untrained_network_with_cues_keeps_as_the_one_without() -> None:
    rng = np.random.default_rng(0)
    agents, authors = torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1])
    cues = torch.tensor([[0, 1, 3, 4], [0, 0, 5, 1], [0, 0, 2, 2], [1, 1, 4, 4]])
    q, r = (torch.from_numpy(rng.normal(size=(4, 8)).astype(np.float32)) for _ in range(2))
    plain = build(PruningArch(3, dim=8, hidden=4), 7)
    cued = build(PruningArch(3, dim=8, hidden=4, confidence_cues=True), 7)
    assert torch.equal(plain(agents, q, r), cued(agents, q, r, authors, cues))
    with pytest.raises(ValueError, match="confidence_cues needs each decision's cues"):
        cued(agents, q, r, authors)


def test_the_batch_carries_each_decisions_cues(tmp_path: Path) -> None:
    from sweep.train.rollouts import rollout_tasks, run_rollouts, training_items

    setup = load_train(write(tmp_path), ["cpp.confidence_cues=true"])
    arch = PruningArch(3, hidden=16, confidence_cues=True)
    router = pg.CppPolicyRouter(setup.method.router, pg.Pruner(pg.build(arch, 0), "t"), sample=True)  # type: ignore[arg-type]
    tasks = rollout_tasks(setup, training_items(setup), router, 1, 3, np.random.default_rng(0))  # type: ignore[arg-type]
    results = asyncio.run(run_rollouts(tasks, agents_for(setup), 4))
    batch = pg.collect(results, setup.rewards)
    assert batch.cues is not None and batch.cues.shape == (len(batch.kept), 4)
    own = [k == 0 for _ in range(3) for k in range(3)] * (3 * 2)  # position 0: one's own response
    assert batch.cues[:, 0].tolist() == [int(o) for o in own]
    state = results[0].state  # the first decision reads round 0's answers and confidences
    conf, answers = state.confidences(0), state.answers(0)
    want = [cues_of(i, order(i, 3)[k], conf, answers) for i in range(3) for k in range(3)]
    assert [tuple(c) for c in batch.cues[:9].tolist()] == want


def _learn(steps: int = 150, **options: bool) -> np.ndarray:
    """Keep probability per author confidence after REINFORCE on peers' responses whose texts say
    nothing: keeping an author who stated confidence below 3 is punished, every other keep rewarded."""
    rng = np.random.default_rng(0)
    n, size, dim = 3, 270, 16
    net = build(PruningArch(n, dim=dim, hidden=8, **options), 0)
    setup = cast(TrainSetup, SimpleNamespace(section={"pg": PGConfig(lr=0.01)}.get))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    agents, authors = (torch.from_numpy(rng.integers(0, n, size)) for _ in range(2))
    stated = torch.from_numpy(rng.integers(1, 6, size))
    cues = torch.stack([torch.zeros(size, dtype=torch.long), torch.zeros(size, dtype=torch.long),
                        torch.full((size,), 3), stated], dim=1)  # fmt: skip
    good = 2 * (stated >= 3).float() - 1
    for u in range(steps):
        q, r = (torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32)) for _ in range(2))
        with torch.no_grad():
            kept = torch.bernoulli(torch.sigmoid(net(agents, q, r, authors, cues)))
        zeros = torch.zeros(size, dtype=torch.long)
        batch = Actions(agents, q, r, kept, good * (2 * kept - 1), zeros, {}, authors, cues)
        pg_update(cast(PruningNet, net), optimizer, batch, setup, 0.0, u)
    q, r = (torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32)) for _ in range(2))
    with torch.no_grad():
        p = torch.sigmoid(net(agents, q, r, authors, cues)).numpy()
    return np.array([p[stated.numpy() == c].mean() for c in range(1, 6)])


def test_the_cues_learn_a_confidence_rule_where_the_text_cannot_tell() -> None:
    cued, plain = _learn(confidence_cues=True), _learn()
    assert (cued[:2] < 0.2).all() and (cued[2:] > 0.8).all(), cued
    assert np.ptp(plain) < 0.15, plain  # without the cues the texts tell nothing of the confidence


def test_a_trained_checkpoint_keeps_its_cues_and_routes_with_them(tmp_path: Path) -> None:
    out = run(write(tmp_path), "cpp.confidence_cues=true", "pg.updates=1", "eval_every=0")
    loaded = ckpt.load(str(out.policy))
    assert PruningArch.from_dict(loaded.arch).confidence_cues is True
    table = loaded.weights["cues"]
    assert table.shape == CUES and np.abs(table).sum() > 0
    policy = pruner_for(str(out.policy), 0, "hashed", 3)
    q, r = np.zeros((6, 384), np.float32), np.ones((6, 384), np.float32) / 20
    cells = np.array([[0, 0, 3, c] for c in range(6)])  # one reader, one text, six author confidences
    p = policy.probs(np.zeros(6, np.int64), q, r, np.ones(6, np.int64), cells)
    logit = np.log(p / (1 - p))
    assert np.allclose(logit - logit[0], np.sqrt(384) * (table[0, 0, 3] - table[0, 0, 3, 0]), atol=1e-4)
