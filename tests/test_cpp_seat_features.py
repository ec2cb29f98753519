"""CPP's seat features (ours, off by default): `cpp.author_seat`, a learned embedding of each
candidate's author seat, `cpp.seat_trust`, a learned keep bias per (reader, author) pair, and
`cpp.author_bias`, a learned keep bias per author shared by every reader. Off,
trainings and checkpoints are what they were; on, an untrained network keeps as the one without them,
the batch carries each candidate's author, the gradient reaches them, and a policy learns whom to
keep where the response texts cannot tell it."""

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

OPTIONS = ["author_seat", "seat_trust", "author_bias"]


@pytest.mark.parametrize("option", OPTIONS)
def test_off_keeps_every_fingerprint_and_checkpoint_arch_as_before(tmp_path: Path, option: str) -> None:
    plain = load_train(write(tmp_path))
    assert plain.fingerprint() == load_train(write(tmp_path), [f"cpp.{option}=false"]).fingerprint()
    assert plain.fingerprint() != load_train(write(tmp_path), [f"cpp.{option}=true"]).fingerprint()
    assert option not in PruningArch(3).to_dict()
    assert getattr(PruningArch.from_dict(PruningArch(3, **{option: True}).to_dict()), option) is True
    with pytest.raises(ValueError, match=f"{option} must be true or false"):
        PruningArch(3, **{option: 1})  # type: ignore[arg-type]


@pytest.mark.parametrize("option", OPTIONS)
def test_an_untrained_network_with_a_seat_feature_keeps_as_the_one_without(option: str) -> None:
    rng = np.random.default_rng(0)
    agents, authors = torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1])
    q, r = (torch.from_numpy(rng.normal(size=(4, 8)).astype(np.float32)) for _ in range(2))
    plain, seated = (
        build(PruningArch(3, dim=8, hidden=4), 7),
        build(PruningArch(3, dim=8, hidden=4, **{option: True}), 7),
    )
    assert torch.equal(plain(agents, q, r), seated(agents, q, r, authors))
    with pytest.raises(
        ValueError, match="author_seat, seat_trust and author_bias need each candidate's author seat"
    ):
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


def _learn(
    distrusted: set[tuple[int, int]], steps: int = 150, readers: int = 3, **options: bool
) -> np.ndarray:
    """Keep probability per (reader, author) after REINFORCE on actions whose texts say nothing of
    their author: keeping a `distrusted` (reader, author) pair is punished, every other keep rewarded.
    Only readers below `readers` decide in training; every reader is measured."""
    rng = np.random.default_rng(0)
    n, size, dim = 3, 270, 16
    net = build(PruningArch(n, dim=dim, hidden=8, **options), 0)
    setup = cast(TrainSetup, SimpleNamespace(section={"pg": PGConfig(lr=0.01)}.get))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    agents = torch.from_numpy(rng.integers(0, readers, size))
    authors = torch.from_numpy(rng.integers(0, n, size))
    bad = torch.tensor([(int(i), int(j)) in distrusted for i, j in zip(agents, authors, strict=True)])
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
    agents = torch.from_numpy(rng.integers(0, n, size))
    with torch.no_grad():
        p = torch.sigmoid(net(agents, q, r, authors)).numpy()
    pairs = agents.numpy() * n + authors.numpy()
    return np.array([p[pairs == k].mean() for k in range(n * n)]).reshape(n, n)


def test_the_seat_embedding_learns_whom_to_keep_where_the_text_cannot_tell() -> None:
    adversary = {(i, 1) for i in range(3)}  # seat 1's responses are bad for every reader
    seated, plain = _learn(adversary, author_seat=True).mean(0), _learn(adversary).mean(0)
    assert seated[1] < 0.2 and seated[0] > 0.8 and seated[2] > 0.8, seated
    assert abs(plain[1] - plain[0]) < 0.15 and abs(plain[1] - plain[2]) < 0.15, plain  # no seat: no way


def test_the_trust_matrix_learns_which_reader_drops_which_author() -> None:
    distrusted = {(0, 1), (2, 0)}
    trusting, plain = _learn(distrusted, seat_trust=True), _learn(distrusted)
    for i in range(3):
        for j in range(3):
            assert (trusting[i, j] < 0.2) if (i, j) in distrusted else (trusting[i, j] > 0.8), trusting
    # without it the texts tell nothing of the author: author 1 kept alike by readers 0 and 1
    assert abs(plain[0, 1] - plain[1, 1]) < 0.15, plain


def test_the_author_bias_carries_what_one_reader_learns_to_every_reader() -> None:
    adversary = {(0, 1)}  # only reader 0 decides in training; seat 1's responses are bad for it
    shared, paired = (
        _learn(adversary, readers=1, author_bias=True),
        _learn(adversary, readers=1, seat_trust=True),
    )
    assert (shared[:, 1] < 0.2).all() and (shared[:, [0, 2]] > 0.8).all(), shared  # readers 1, 2 as well
    # the trust matrix moves reader 0's alone: reader 2 keeps author 1 as it keeps author 0
    assert paired[0, 1] < 0.2 and paired[2, 1] > 0.5 and abs(paired[2, 1] - paired[2, 0]) < 0.1, paired


@pytest.mark.parametrize(
    "option, weights, shape",
    [
        ("author_seat", "author", (3, 384)),
        ("seat_trust", "trust", (3, 3)),
        ("author_bias", "author_bias", (3,)),
    ],
)
def test_a_trained_checkpoint_keeps_its_seat_feature_and_routes_with_it(
    tmp_path: Path, option: str, weights: str, shape: tuple[int, int]
) -> None:
    out = run(write(tmp_path), f"cpp.{option}=true", "pg.updates=1", "eval_every=0")
    loaded = ckpt.load(str(out.policy))
    assert getattr(PruningArch.from_dict(loaded.arch), option) is True
    assert loaded.weights[weights].shape == shape and np.abs(loaded.weights[weights]).sum() > 0
    policy = pruner_for(str(out.policy), 0, "hashed", 3)
    assert getattr(policy.arch, option)
    q, r = np.zeros((3, 384), np.float32), np.ones((3, 384), np.float32) / 20
    # one reader, one candidate text, three authors: the seat alone moves the keep probability
    p = policy.probs(np.zeros(3, np.int64), q, r, np.arange(3))
    # One Adam step moves every author's bias, and reader 0's trust in every author, by lr, up or down:
    # two of three can tie (the exact move is checked below); an embedding per author moves the three apart.
    assert len(set(np.round(p, 9).tolist())) >= (3 if option == "author_seat" else 2)
    if option in ("seat_trust", "author_bias"):  # the logit moves by exactly sqrt(dim) times the bias
        logit = np.log(p / (1 - p))
        bias = loaded.weights["trust"][0] if option == "seat_trust" else loaded.weights["author_bias"]
        assert np.allclose(logit - logit[0], np.sqrt(384) * (bias - bias[0]), atol=1e-4)
