"""A population's expected accuracy on the rows that never debate (one model alone, self-consistency,
Vote, Consistency-Fuse): the mean over the row's items of the chance that the majority vote of
independent round-0 samples is right, estimated by `DRAWS` Monte Carlo draws per item with a fixed
stream, so it is a smooth, deterministic function of the population's numbers.

Why: the fit rows are mostly consistency curves whose neighbouring points differ by 1-3 points, while
one seed of 100 items moves a row by about 5 (a binomial's sd); a fit that scores episodes on a seed
or two fits that seed's luck (the v3 fits did: their curves zig-zag). Scored on expectations, a
fit's residuals are the model's, not the sample's. Debate rows still run as episodes.

Each draw follows the population model's round-0 reply (`actors.population`): right with the
member's competence p on the item; wrong, the item's shared misconception with probability
`misconception`, else one of the member's own slips (uniform over the item's other distractors; model
v6: its habitual one on the item at rate `habit`); model v8: at rate `echo` the member's modal answer
on the item instead (the engine's own `modal`, one answer per member and item); a confidence from
the calibrated tables at rate `calibration`, else uniform (model v5: the table follows the sample's
correctness at rate `self_knowledge`, else a Bernoulli of p). The vote is
`debate.vote.majority_vote`'s rule: most votes, then the highest summed confidence, then the smallest
answer. `tests/test_calibrate_expected.py` holds these estimates to the mean of real episodes over
many seeds, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from actors.population import PopulationBackend
from actors.populations import Population
from actors.sim_hints import Hints
from actors.sim_items import CONF_RIGHT, CONF_UNIFORM, CONF_WRONG, item_profile, stable_hash
from data.grading.graders import grader_for
from data.types import Sample

DRAWS = 500  # per item: the estimate's sd is about 0.2 points on 100 items
_DISTRACTORS = 4  # as the population model (`actors.population._DISTRACTORS`)
_SEED = 0x5EED  # one fixed stream: the same draws for every population, so estimates compare
_TABLES = np.array([CONF_RIGHT, CONF_WRONG, CONF_UNIFORM])  # a confidence's cumulative weights


class _Item(NamedTuple):
    """An item as the population model sees it (its hints): its answers, gold first, then its
    distractors, the shared misconception first; which of them the item's grader accepts (a distractor
    can be an equivalent form of the gold); and each answer's rank in string order (the vote's last
    tie-break)."""

    hints: Hints
    answers: tuple[str, ...]
    accepted: tuple[bool, ...]
    ranks: tuple[int, ...]


_ITEMS: dict[tuple[str, str, str, int], _Item] = {}


def _item(sample: Sample) -> _Item:
    """The item's `_Item`, kept per item: a fit asks thousands of times."""
    key = (sample.id, sample.gold, sample.kind, len(sample.choices))
    if key not in _ITEMS:
        h = Hints.read(
            {"kind": sample.kind, "gold": sample.gold, "n_choices": len(sample.choices), "item": sample.id}
        )
        assert h.gold is not None
        wrong = item_profile(h.item, h.gold, h.kind, h.n_choices, _DISTRACTORS)[1]
        grader = grader_for(sample)
        answers = (h.gold, *wrong)
        ok = (True, *(grader.grade(w, sample.gold) == "correct" for w in wrong))
        _ITEMS[key] = _Item(h, answers, ok, tuple(np.argsort(np.argsort(answers)).tolist()))
    return _ITEMS[key]


def _confidence(
    rng: np.random.Generator,
    right: np.ndarray,
    calibration: np.ndarray,
    knows: np.ndarray | None = None,
    p: np.ndarray | None = None,
) -> np.ndarray:
    """Stated confidences 1-5 for samples `right` (bool), seat by seat `calibration` on the last axis;
    with `knows` (v5's self-knowledge per seat) and `p` (competence, broadcast to `right`) a calibrated
    confidence's table follows `right` at rate `knows`, else a Bernoulli(p) draw of its own."""
    calibrated = rng.random(right.shape) < calibration
    u = rng.random(right.shape)
    if knows is not None and p is not None:  # drawn after v4's: a v4 population's stream is unchanged
        know = rng.random(right.shape) < knows
        right = np.where(know, right, rng.random(right.shape) < p)
    # Each sample's table (right, wrong, uniform); its confidence is 1 + how many of the table's
    # cumulative weights lie at or below u scaled to the table's total (`bisect_right`, as the engine).
    which = np.where(calibrated, np.where(right, 0, 1), 2)
    x = u * _TABLES[which, -1]
    out = np.ones(right.shape, dtype=np.int64)
    for j in range(_TABLES.shape[1]):
        out += _TABLES[which, j] <= x
    return np.minimum(out, 5)


def vote_accuracy(
    population: Population,
    seats: Sequence[str],
    samples: Sequence[Sample],
    dataset: str,
    draws: int = DRAWS,
) -> float:
    """Expected accuracy (0-1) of the majority vote of one round-0 sample per seat (member names,
    repeats allowed) on `samples` of benchmark `dataset`, averaged over the items."""
    if not seats or not samples:
        raise ValueError("vote_accuracy: needs at least one seat and one item")
    rng = np.random.default_rng(_SEED)
    # Each member's numbers are read once per item and spread over its seats (App D's rows seat one
    # member up to twelve times).
    names = list(dict.fromkeys(seats))
    members = {m: PopulationBackend(model=m, population=population, member=m) for m in names}
    col = np.array([names.index(m) for m in seats])
    items = [_item(s) for s in samples]
    width = max(len(it.answers) for it in items)
    # Per item (rows): each seat's competence, its number of own slips, its answers' string order
    # (the vote's last tie-break; padding ranks last) and which answers the grader accepts.
    p = np.array(
        [
            [members[m].competence(s.id, it.answers[0], dataset) for m in names]
            for s, it in zip(samples, items, strict=True)
        ]
    )[:, col]
    slips = np.array([len(it.answers) - 2 for it in items])[:, None, None]
    lex = np.full((len(samples), width), width)
    accepted = np.zeros((len(samples), width), dtype=bool)
    for i, it in enumerate(items):
        lex[i, : len(it.answers)] = it.ranks
        accepted[i, : len(it.accepted)] = it.accepted
    shape = (len(samples), draws, len(seats))
    right = rng.random(shape) < p[:, None, :]
    # Answer codes: 0 the gold, 1 the shared misconception, 2 + k the k-th own slip.
    u_slip, misconception = rng.random(shape), population.bench(dataset).misconception
    misconceived = (u_slip < misconception) | (slips < 1)
    slip = 2 + np.floor(rng.random(shape) * np.maximum(slips, 1)).astype(np.int64)
    habit = np.array([population.member(m).habit for m in seats])
    if (habit > 0).any():  # v6: at rate `habit` a member's slip is its habitual one on the item
        habitual = np.array(
            [
                [stable_hash("habit", m, s.id) % max(len(it.answers) - 2, 1) for m in names]
                for s, it in zip(samples, items, strict=True)
            ]
        )[:, col]
        usual = u_slip - misconception < habit * (1.0 - misconception)
        slip = np.where(usual, 2 + habitual[:, None, :], slip)
    code = np.where(right, 0, np.where(misconceived, 1, slip))
    echo = np.array([population.member(m).echo_on(dataset) for m in seats])
    if (echo > 0).any():  # v8: at rate `echo` a sample is its member's modal answer on the item
        modal = np.array(
            [
                [it.answers.index(members[m].modal(it.hints, it.answers[1:], dataset)) for m in names]
                for it in items
            ]
        )[:, col]
        code = np.where(rng.random(shape) < echo, modal[:, None, :], code)
        right = code == 0
    calibration = np.array([population.member(m).calibration for m in seats])
    knows = np.array([population.member(m).self_knowledge for m in seats])
    if population.version >= "v5" and (knows < 1.0).any():
        conf = _confidence(rng, right, calibration, knows, p[:, None, :])
    else:
        conf = _confidence(rng, right, calibration)
    # Per (item, draw): each answer's votes and summed confidence, counted in one pass over the
    # samples; the winner has most votes, then most summed confidence (5 x seats < 100), then the
    # smallest answer.
    cell = (np.arange(len(samples) * draws).reshape(len(samples), draws, 1) * width + code).ravel()
    size = len(samples) * draws * width
    votes = np.bincount(cell, minlength=size).reshape(len(samples), draws, width)
    support = np.bincount(cell, weights=conf.ravel(), minlength=size).reshape(len(samples), draws, width)
    score = votes * 1e6 + support * 1e2 + (width - lex[:, None, :]) * (votes > 0)
    winner = score.argmax(axis=2)
    return float(np.take_along_axis(accepted, winner, axis=1).mean())
