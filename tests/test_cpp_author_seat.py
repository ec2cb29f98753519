"""`cpp.author_seat`: CPP's network may also learn an embedding of each candidate's author seat (ours,
off by default). Off, trainings and checkpoints are what they were; on, an untrained network keeps
as the one without it, the batch carries each candidate's author, the gradient reaches the seat
embeddings, and a policy learns whom to keep where the response texts cannot tell it."""

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
from debate.policies.pruning import PruningArch
from sweep.train import pg
from sweep.train.config import TrainSetup, load_train
from sweep.train.pg_config import PGConfig
from sweep.train.pg_update import Actions, pg_update
from tests.test_train_cpp import agents_for, run, write


def test_off_keeps_every_fingerprint_and_checkpoint_arch_as_before(tmp_path: Path) -> None:
    plain = load_train(write(tmp_path))
    assert plain.fingerprint() == load_train(write(tmp_path), ["cpp.author_seat=false"]).fingerprint()
    assert plain.fingerprint() != load_train(write(tmp_path), ["cpp.author_seat=true"]).fingerprint()
    assert "author_seat" not in PruningArch(3).to_dict()
    assert PruningArch.from_dict(PruningArch(3, author_seat=True).to_dict()).author_seat is True
    with pytest.raises(ValueError, match="author_seat must be true or false"):
        PruningArch(3, author_seat=1)  # type: ignore[arg-type]


def test_an_untrained_network_with_seat_embeddings_keeps_as_the_one_without() -> None:
    rng = np.random.default_rng(0)
    agents, authors = torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1])
    q, r = (torch.from_numpy(rng.normal(size=(4, 8)).astype(np.float32)) for _ in range(2))
    plain, seated = (
        build(PruningArch(3, dim=8, hidden=4), 7),
        build(PruningArch(3, dim=8, hidden=4, author_seat=True), 7),
    )
    assert torch.equal(plain(agents, q, r), seated(agents, q, r, authors))
    with pytest.raises(ValueError, match="author_seat and seat_trust need each candidate's author seat"):
        seated(agents, q, r)


def test_the_batch_carries_each_candidates_author(tmp_path: Path) -> None:
    from sweep.train.rollouts import rollout_tasks, run_rollouts, training_items

    setup = load_train(write(tmp_path), ["cpp.author_seat=true"])
    arch = PruningArch(3, hidden=16, author_seat=True)
    router = pg.CppPolicyRouter(setup.method.router, pg.Pruner(pg.build(arch, 0), "t"), sample=True)  # type: ignore[arg-type]
    tasks = rollout_tasks(setup, training_items(setup), router, 1, 3, np.random.default_rng(0))  # type: ignore[arg-type]
    batch = pg.collect(asyncio.run(run_rollouts(tasks, agents_for(setup), 4)), setup.rewards)
    # agent i's k-th decision is on the response of seat order(i, n)[k], every round of every episode
    one_round = [order(i, 3)[k] for i in range(3) for k in range(3)]
    assert batch.authors is not None and batch.authors.tolist() == one_round * (3 * 2)


def _learn(author_seat: bool, steps: int = 150) -> np.ndarray:
    """Keep probability by author after REINFORCE on actions whose texts say nothing of their author:
    keeping seat 1's response is punished, keeping the others' rewarded (as an adversary at seat 1)."""
    rng = np.random.default_rng(0)
    n, size, dim = 3, 270, 16
    arch = PruningArch(n, dim=dim, hidden=8, author_seat=author_seat)
    net = build(arch, 0)
    setup = cast(TrainSetup, SimpleNamespace(section={"pg": PGConfig(lr=0.01)}.get))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    agents = torch.from_numpy(rng.integers(0, n, size))
    authors = torch.from_numpy(rng.integers(0, n, size))
    for u in range(steps):
        q = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
        r = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
        with torch.no_grad():
            kept = torch.bernoulli(torch.sigmoid(net(agents, q, r, authors)))
        good = (authors != 1).float() * 2 - 1
        batch = Actions(
            agents, q, r, kept, good * (2 * kept - 1), torch.zeros(size, dtype=torch.long), {}, authors
        )
        pg_update(cast(PruningNet, net), optimizer, batch, setup, 0.0, u)
    q = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
    r = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
    with torch.no_grad():
        p = torch.sigmoid(net(agents, q, r, authors)).numpy()
    return np.array([p[authors.numpy() == j].mean() for j in range(n)])


def test_the_seat_embedding_learns_whom_to_keep_where_the_text_cannot_tell() -> None:
    seated, plain = _learn(True), _learn(False)
    assert seated[1] < 0.2 and seated[0] > 0.8 and seated[2] > 0.8, seated
    assert abs(plain[1] - plain[0]) < 0.15 and abs(plain[1] - plain[2]) < 0.15, plain  # no seat: no way


def test_a_trained_checkpoint_keeps_its_seat_embeddings_and_routes_with_them(tmp_path: Path) -> None:
    out = run(write(tmp_path), "cpp.author_seat=true", "pg.updates=1", "eval_every=0")
    loaded = ckpt.load(str(out.policy))
    assert PruningArch.from_dict(loaded.arch).author_seat is True
    assert loaded.weights["author"].shape == (3, 384) and np.abs(loaded.weights["author"]).sum() > 0
    policy = pruner_for(str(out.policy), 0, "hashed", 3)
    assert policy.arch.author_seat
    q = np.zeros((3, 384), np.float32)
    # one candidate text, three authors: the seat alone moves the keep probability
    p = policy.probs(np.zeros(3, np.int64), q, np.ones((3, 384), np.float32) / 20, np.arange(3))
    assert len(set(np.round(p, 9).tolist())) == 3
