"""`cpp.content` false (ours; true by default): the network reads no text — its query and response
embeddings are zeroed — so a policy is a learned table over the reader, the seat features and the
confidence cues. True leaves fingerprints and checkpoints as they were; false survives a checkpoint
and routes the same whatever the texts say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from debate.policies import checkpoint as ckpt
from debate.policies.fuseglu import build, pruner_for
from debate.policies.pruning import PruningArch
from sweep.train.config import load_train
from tests.test_train_cpp import run, write


def test_on_keeps_every_fingerprint_and_checkpoint_arch_as_before(tmp_path: Path) -> None:
    plain = load_train(write(tmp_path))
    assert plain.fingerprint() == load_train(write(tmp_path), ["cpp.content=true"]).fingerprint()
    assert plain.fingerprint() != load_train(write(tmp_path), ["cpp.content=false"]).fingerprint()
    assert "content" not in PruningArch(3).to_dict()
    assert PruningArch.from_dict(PruningArch(3, content=False).to_dict()).content is False
    with pytest.raises(ValueError, match="content must be true or false"):
        PruningArch(3, content=0)  # type: ignore[arg-type]


def test_without_content_the_texts_move_no_logit_but_the_cues_and_seats_do() -> None:
    rng = np.random.default_rng(0)
    agents, authors = torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1])
    cues = torch.tensor([[0, 1, 3, 4], [0, 0, 5, 1], [0, 0, 2, 2], [1, 1, 4, 4]])
    q, r, q2, r2 = (torch.from_numpy(rng.normal(size=(4, 8)).astype(np.float32)) for _ in range(4))
    arch = dict(dim=8, hidden=4, confidence_cues=True, author_bias=True)
    blind, reading = build(PruningArch(3, content=False, **arch), 7), build(PruningArch(3, **arch), 7)
    assert torch.equal(blind(agents, q, r, authors, cues), blind(agents, q2, r2, authors, cues))
    assert not torch.equal(reading(agents, q, r, authors, cues), reading(agents, q2, r2, authors, cues))
    before = blind(agents, q, r, authors, cues)
    with torch.no_grad():
        blind.cues[0, 0, 5, 1] += 1.0  # the second decision's cell
        blind.author_bias[0] += 1.0  # the third decision's author
    after = blind(agents, q, r, authors, cues)
    assert torch.equal(after != before, torch.tensor([False, True, True, False]))
    assert torch.equal(after, blind(agents, q2, r2, authors, cues))


def test_a_trained_checkpoint_reads_no_text(tmp_path: Path) -> None:
    out = run(
        write(tmp_path), "cpp.content=false", "cpp.confidence_cues=true", "pg.updates=1", "eval_every=0"
    )
    loaded = ckpt.load(str(out.policy))
    assert PruningArch.from_dict(loaded.arch).content is False
    policy = pruner_for(str(out.policy), 0, "hashed", 3)
    rng = np.random.default_rng(1)
    q, r = (rng.normal(size=(6, 384)).astype(np.float32) for _ in range(2))
    cells = np.array([[0, 0, 3, c] for c in range(6)])
    agents, authors = np.zeros(6, np.int64), np.ones(6, np.int64)
    p = policy.probs(agents, q, r, authors, cells)
    assert np.array_equal(p, policy.probs(agents, np.zeros_like(q), r[::-1].copy(), authors, cells))
