"""`cpp.seat_trust`: CPP's keep logit may also carry a learned bias per (reader, author) pair of seats
(ours, off by default). Off, trainings and checkpoints are what they were; on, an untrained network
keeps as the one without it, the gradient reaches each pair's own bias, and a policy learns which
reader should drop which author where the response texts cannot tell it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest
import torch

from debate.policies import checkpoint as ckpt
from debate.policies.fuseglu import PruningNet, build, pruner_for
from debate.policies.pruning import PruningArch
from sweep.train.config import TrainSetup, load_train
from sweep.train.pg_config import PGConfig
from sweep.train.pg_update import Actions, pg_update
from tests.test_train_cpp import run, write

DISTRUSTED = {(0, 1), (2, 0)}  # (reader, author): keeping these is punished, every other keep rewarded


def test_off_keeps_every_fingerprint_and_checkpoint_arch_as_before(tmp_path: Path) -> None:
    plain = load_train(write(tmp_path))
    assert plain.fingerprint() == load_train(write(tmp_path), ["cpp.seat_trust=false"]).fingerprint()
    assert plain.fingerprint() != load_train(write(tmp_path), ["cpp.seat_trust=true"]).fingerprint()
    assert "seat_trust" not in PruningArch(3).to_dict()
    assert PruningArch.from_dict(PruningArch(3, seat_trust=True).to_dict()).seat_trust is True
    with pytest.raises(ValueError, match="seat_trust must be true or false"):
        PruningArch(3, seat_trust="yes")  # type: ignore[arg-type]


def test_an_untrained_network_with_a_trust_matrix_keeps_as_the_one_without() -> None:
    rng = np.random.default_rng(0)
    agents, authors = torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1])
    q, r = (torch.from_numpy(rng.normal(size=(4, 8)).astype(np.float32)) for _ in range(2))
    plain, trusting = (
        build(PruningArch(3, dim=8, hidden=4), 7),
        build(PruningArch(3, dim=8, hidden=4, seat_trust=True), 7),
    )
    assert torch.equal(plain(agents, q, r), trusting(agents, q, r, authors))
    with pytest.raises(ValueError, match="author_seat and seat_trust need each candidate's author seat"):
        trusting(agents, q, r)


def _learn(seat_trust: bool, steps: int = 150) -> np.ndarray:
    """Keep probability per (reader, author) after REINFORCE on actions whose texts say nothing of
    their author: keeping a DISTRUSTED pair is punished, every other keep rewarded."""
    rng = np.random.default_rng(0)
    n, size, dim = 3, 270, 16
    net = build(PruningArch(n, dim=dim, hidden=8, seat_trust=seat_trust), 0)
    setup = cast(TrainSetup, SimpleNamespace(section={"pg": PGConfig(lr=0.01)}.get))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    agents = torch.from_numpy(rng.integers(0, n, size))
    authors = torch.from_numpy(rng.integers(0, n, size))
    bad = torch.tensor([(int(i), int(j)) in DISTRUSTED for i, j in zip(agents, authors, strict=True)])
    for u in range(steps):
        q = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
        r = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
        with torch.no_grad():
            kept = torch.bernoulli(torch.sigmoid(net(agents, q, r, authors)))
        good = 1 - 2 * bad.float()
        batch = Actions(
            agents, q, r, kept, good * (2 * kept - 1), torch.zeros(size, dtype=torch.long), {}, authors
        )
        pg_update(cast(PruningNet, net), optimizer, batch, setup, 0.0, u)
    q = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
    r = torch.from_numpy(rng.normal(size=(size, dim)).astype(np.float32))
    with torch.no_grad():
        p = torch.sigmoid(net(agents, q, r, authors)).numpy()
    pairs = agents.numpy() * n + authors.numpy()
    return np.array([p[pairs == k].mean() for k in range(n * n)]).reshape(n, n)


def test_the_trust_matrix_learns_which_reader_drops_which_author() -> None:
    trusting, plain = _learn(True), _learn(False)
    for i in range(3):
        for j in range(3):
            if (i, j) in DISTRUSTED:
                assert trusting[i, j] < 0.2, trusting
            else:
                assert trusting[i, j] > 0.8, trusting
    # without it the texts tell nothing of the author: author 1 kept alike by readers 0 and 1
    assert abs(plain[0, 1] - plain[1, 1]) < 0.15, plain


def test_a_trained_checkpoint_keeps_its_trust_matrix_and_routes_with_it(tmp_path: Path) -> None:
    out = run(write(tmp_path), "cpp.seat_trust=true", "pg.updates=1", "eval_every=0")
    loaded = ckpt.load(str(out.policy))
    assert PruningArch.from_dict(loaded.arch).seat_trust is True
    assert loaded.weights["trust"].shape == (3, 3) and np.abs(loaded.weights["trust"]).sum() > 0
    policy = pruner_for(str(out.policy), 0, "hashed", 3)
    assert policy.arch.seat_trust
    q, r = np.zeros((3, 384), np.float32), np.ones((3, 384), np.float32) / 20
    # one reader, one candidate text, three authors: the pair alone moves the keep probability
    p = policy.probs(np.zeros(3, np.int64), q, r, np.arange(3))
    assert len(set(np.round(p, 9).tolist())) == 3
    logit = np.log(p / (1 - p))
    trust = loaded.weights["trust"][0]
    assert np.allclose(logit - logit[0], np.sqrt(384) * (trust - trust[0]), atol=1e-4)
