"""Population models v2-v9: simulated debaters whose samples share a latent competence per item and who
read each other's arguments. Every mechanism and parameter is stated in `docs/population.md`; the
parameters come from a population file (`actors.populations`). In short, for member m on item i of
benchmark b:

- competence: p = sigmoid(skill[m][b] - item_spread[b] z_i + spread[m][b] e_mi), z_i and e_mi standard
  normals hashed from the item (shared by every member) and from (member, item) (shared by every
  sample of that member), so one member's consistency saturates at what it can do on the item;
- a sample is right with probability p; a wrong one gives the item's shared misconception with
  probability misconception[b] (several members fall into it together), else a slip of its own:
  in v6 its habitual wrong answer on the item at rate habit[m] (one answer all its samples share),
  else a fresh slip; in v8 a first answer repeats the member's modal answer on the item at rate
  echo[m] (v9: echo[m][b]; one sample drawn once per member and item, from hashed uniforms), so
  its samples agree beyond what its competence makes them (a vote of them gains less on one sample);
- an update reads the peers' arguments: a correct one convinces with probability growing with the
  reader's competence (it can check it), a confident wrong one misleads in proportion to the
  reader's incompetence; an argument cut off by an output cap persuades less (`cut_persuasion`); an
  importance weight w shown in the prompt scales a source's pull by 2w; agreeing peers hold a reader
  where it is; unconvinced, the reader may re-solve from scratch (`reflect`); `stubbornness` is the
  share of updates that change nothing;
- context cost: peer text past `context_free_tokens` lowers the reader's competence logit by
  `context_cost` per doubling (and its prompt tokens grow with it); in v7 a reader shown any peer's
  work gains `insight[m]` on that logit (a critique or a worked answer helps it solve the item);
- confidence: from the calibrated tables (right: mostly 4-5, wrong: mostly 1-3) at rate
  `calibration`, else uniform; in v5 the table follows the sample's own correctness only at rate
  `self_knowledge`, else a Bernoulli of the member's competence p (how easy the item feels), so two
  samples of one member need not know which of them is right;
- replies have the member's length distribution (log-normal through `tokens_median`/`tokens_q95`);
  a cap shortens the argument and never removes the answer; adversarial seats argue for the shared
  misconception at full length with confidence 4-5.

Draws are seeded like the v1 engine's (request seed, member, item, agent, round, phase) and made up
front, so routers that show an agent different peers still compare on common random numbers.
"""

from __future__ import annotations

import asyncio
import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from actors.base import ChatRequest, Completion, Timer
from actors.pop_text import reasoning_text, reply_length, write
from actors.populations import Population
from actors.sim_hints import Hints, as_int
from actors.sim_items import CONF_RIGHT, CONF_UNIFORM, CONF_WRONG, LETTERS, item_profile, stable_hash
from actors.sim_seed import seeded
from actors.sim_text import review, same

VERSION = "v9"  # the newest model this module runs (it runs every version in `actors.populations.VERSIONS`)
_DISTRACTORS = 4
_JSON_CHARS = 60  # the JSON around the reasoning: {"reasoning": "", "answer": ..., "confidence": 3}


@lru_cache(maxsize=1 << 17)
def _normal(*key: object) -> float:
    """A standard normal fixed by `key` (the same in every process)."""
    return float(np.random.default_rng(stable_hash(*key)).standard_normal())


@lru_cache(maxsize=1 << 17)
def _uniform(*key: object) -> float:
    """A uniform on [0, 1) fixed by `key` (the same in every process)."""
    return float(np.random.default_rng(stable_hash(*key)).random())


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


@dataclass(frozen=True)
class Peer:
    """One argument a reader was shown: the peer's answer, stated confidence, and how it reads."""

    answer: str | None
    confidence: int
    chars: int
    complete: bool
    weight: float  # the pull multiplier: 2 x the importance shown, 1 when none is shown


def read_peers(raw: Mapping[str, Any]) -> list[Peer]:
    """The peers of a request's hints, aligned with `sources`; garbled entries read neutrally."""
    peers = raw.get("peers")
    if not isinstance(peers, (list, tuple)):
        return []
    n = len(peers)

    def column(key: str) -> list[Any]:
        v = raw.get(key)
        return list(v) if isinstance(v, (list, tuple)) and len(v) == n else [None] * n

    out = []
    for p, chars, done, w in zip(
        peers, column("peer_chars"), column("peer_complete"), column("weights"), strict=True
    ):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            continue
        answer = str(p[0]).strip() or None if p[0] is not None else None
        weight = (
            2.0 * min(1.0, max(0.0, float(w))) if isinstance(w, (int, float)) and math.isfinite(w) else 1.0
        )
        out.append(
            Peer(
                answer, min(5, max(1, as_int(p[1], 3))), max(0, as_int(chars, 400)), done is not False, weight
            )
        )
    return out


class PopulationBackend:
    """Member `member` of `population`, served under the pool name `model` (see the module docstring)."""

    def __init__(self, model: str, population: Population, member: str, latency_s: float = 0.0) -> None:
        self.model, self.population, self.member_name = model, population, member
        self.member = population.member(member)
        self.dynamics = population.dynamics
        self.latency_s = latency_s
        self._key = stable_hash("member", member)

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One completion per request, in order; awaits `latency_s` once per batch when it is > 0."""
        with Timer() as timer:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            out = [self._complete(r) for r in requests]
        if self.latency_s > 0:
            out = [replace(c, latency_s=timer.elapsed) for c in out]
        return out

    def competence(self, item: str, gold: str, dataset: str) -> float:
        """p: the chance one sample of this member is right on the item (before any context cost)."""
        return _sigmoid(self._logit(item, gold, dataset))

    def _logit(self, item: str, gold: str, dataset: str) -> float:
        bench = self.population.bench(dataset)
        z, e = _normal("item", item, gold), _normal("member-item", self.member_name, item, gold)
        return self.member.skill_on(dataset) - bench.item_spread * z + self.member.spread_on(dataset) * e

    def _complete(self, req: ChatRequest) -> Completion:
        raw = req.hints if isinstance(req.hints, Mapping) else {}
        h = Hints.read(raw)
        seed = int(req.seed or 0) & (2**64 - 1)
        call = stable_hash(h.item, h.agent, h.round, h.phase)
        rng = seeded([seed, self._key, call])
        fields, tag = self._decide(rng, h, raw)
        tpc = self.dynamics.tokens_per_char
        length_rng = np.random.default_rng([seed, self._key, call, 0x1E7])  # lengths: their own stream
        tokens = reply_length(length_rng, self.member.tokens_median, self.member.tokens_q95)
        if "reasoning" in fields:
            label = f"option {fields['answer']}" if h.kind == "choice" else str(fields["answer"])
            chars = max(0, int(tokens / tpc) - _JSON_CHARS)
            fields = {**fields, "reasoning": reasoning_text(length_rng, tag, label, chars)}
        text, completion_tokens, finish = write(fields, req.max_tokens, tpc)
        chars_in = sum(len(m.content) for m in req.messages)
        prompt_tokens = math.ceil(chars_in * tpc) + 4 * len(req.messages)
        return Completion(text, prompt_tokens, completion_tokens, finish_reason=finish, model=self.model)

    def _confidence(self, rng: np.random.Generator, correct: bool, p: float) -> int:
        """A stated confidence 1-5 for a sample that is `correct`, made at competence `p`."""
        calibrated = rng.random() < self.member.calibration
        knows = self.member.self_knowledge
        if self.population.version >= "v5" and knows < 1.0:  # v5's draws: older streams stay as they were
            know, feel = rng.random(2).tolist()
            if know >= knows:  # the table follows how easy the item feels, not this sample's luck
                correct = feel < p
        table = (CONF_RIGHT if correct else CONF_WRONG) if calibrated else CONF_UNIFORM
        return min(5, bisect_right(table, rng.random() * table[-1]) + 1)

    def _decide(
        self, rng: np.random.Generator, h: Hints, raw: Mapping[str, Any]
    ) -> tuple[dict[str, Any], str]:
        """The reply's fields and the kind of move it makes (for its wording)."""
        if h.gold is None:  # no gold to be right about: a blind guess
            guess = LETTERS[int(rng.integers(h.n_choices))] if h.kind == "choice" else str(rng.integers(100))
            return {"reasoning": "", "answer": guess, "confidence": int(rng.integers(1, 6))}, "blind"
        dataset = str(raw.get("dataset") or "")
        _, wrong = item_profile(h.item, h.gold, h.kind, h.n_choices, _DISTRACTORS)
        if h.adversary:  # argues for the shared misconception whatever it is shown
            conf = 4 + int(rng.random() < 0.5)
            if h.phase == "critique":
                return self._critique(rng, h, wrong[0], conf), "adversary"
            return {"reasoning": "", "answer": wrong[0], "confidence": conf}, "adversary"
        u = rng.random(6).tolist()  # drawn up front: the same numbers whatever the peers say
        logit = self._logit(h.item, h.gold, dataset)
        fresh = self._sample(u[0], u[1], _sigmoid(logit), h, wrong, dataset)
        if h.phase not in ("update", "revise", "critique"):
            # v8 (0 before; v9: per benchmark): u[2] serves updates only, so no stream moves
            if u[2] < self.member.echo_on(dataset):
                fresh = self.modal(h, wrong, dataset)
            return self._answer(rng, h.gold, fresh, "initial", (), _sigmoid(logit)), "initial"
        own = h.own[0] if h.own and h.own[0] is not None else fresh
        if h.phase == "critique":
            conf = self._confidence(rng, same(own, h.gold), _sigmoid(logit))
            return self._critique(rng, h, own, conf), "kept"
        peers = [p for p in read_peers(raw) if p.answer is not None]
        # v7: reading others' work lifts the reader's own competence (0 in older files: as they were).
        lift = self.member.insight if peers else 0.0
        p_eff = _sigmoid(logit - self._context_cost(peers) + lift)
        tag, answer = self._update(u, h.gold, own, peers, p_eff)
        if tag == "fixed":  # re-solved from scratch: a fresh sample at the competence it has now
            answer = self._sample(u[4], u[5], p_eff, h, wrong, dataset)
            tag = "kept" if same(answer, own) else "fixed"
        return self._answer(rng, h.gold, answer, tag, peers, p_eff), tag

    def modal(self, h: Hints, wrong: Sequence[str], dataset: str) -> str:
        """v8: the member's modal answer on the item, one sample drawn from uniforms hashed from
        (member, item): the answer an echoing first answer repeats."""
        u_right = _uniform("mode", self.member_name, h.item)
        u_slip = _uniform("mode-slip", self.member_name, h.item)
        return self._sample(u_right, u_slip, self.competence(h.item, str(h.gold), dataset), h, wrong, dataset)

    def _sample(
        self, u_right: float, u_slip: float, p: float, h: Hints, wrong: Sequence[str], dataset: str
    ) -> str:
        """One sample: right with probability p, else the shared misconception, else (v6) at rate `habit`
        the member's habitual wrong answer on the item, else a slip of its own."""
        assert h.gold is not None
        if u_right < p:
            return h.gold
        misconception = self.population.bench(dataset).misconception
        if u_slip < misconception or len(wrong) == 1:
            return wrong[0]
        own_slips = list(wrong[1:])
        habit = self.member.habit  # v6: a file of an older model has 0, and its slips stay as they were
        if habit > 0.0 and u_slip - misconception < habit * (1.0 - misconception):
            return own_slips[stable_hash("habit", self.member_name, h.item) % len(own_slips)]
        pick = stable_hash("slip", self.member_name, h.item) + int(u_slip * 1e9)
        return own_slips[pick % len(own_slips)]

    def _context_cost(self, peers: Sequence[Peer]) -> float:
        d = self.dynamics
        tokens = sum(p.chars for p in peers) * d.tokens_per_char
        free = max(1.0, float(d.context_free_tokens))
        return d.context_cost * math.log2(tokens / free) if tokens > free else 0.0

    def _update(
        self, u: list[float], gold: str, own: str, peers: Sequence[Peer], p: float
    ) -> tuple[str, str]:
        """(tag, answer) after reading `peers` at effective competence `p`; "fixed" means re-solve."""
        d = self.dynamics
        move = 1.0 - d.stubbornness
        # How far a reader can check a correct argument: its competence (v2); v3 adds a floor, since
        # checking a shown solution is easier than finding one (`verify`).
        check = d.verify + (1.0 - d.verify) * p if self.population.version >= "v3" else p
        if u[2] >= move:
            return "kept", own
        strength = [(1.0 if q.complete else d.cut_persuasion) * q.weight for q in peers]
        hold = 1.0 / (
            1.0
            + sum(s * q.confidence / 5 for q, s in zip(peers, strength, strict=True) if same(q.answer, own))
        )
        convince, mislead = 1.0, 1.0  # chances of *not* being moved, multiplied over arguments
        pull: dict[str, float] = {}
        for q, s in zip(peers, strength, strict=True):
            if same(q.answer, own):
                continue
            if same(q.answer, gold):
                convince *= 1.0 - min(1.0, d.persuasion * check * s)
            else:
                m = min(1.0, d.mislead * (1.0 - p) * s * q.confidence / 5)
                mislead *= 1.0 - m
                pull[str(q.answer)] = pull.get(str(q.answer), 0.0) + m
        p_conv = 0.0 if same(own, gold) else (1.0 - convince) * hold
        p_mis = (1.0 - mislead) * hold
        v = u[3]
        if v < p_conv:
            return "switched", gold
        if pull and v < p_conv + (1.0 - p_conv) * p_mis:
            return "switched", max(pull, key=lambda a: pull[a])
        if u[2] < move * d.reflect:  # unmoved by the others: think it through again
            return "fixed", own
        return "kept", own

    def _answer(
        self,
        rng: np.random.Generator,
        gold: str,
        answer: str,
        tag: str,
        peers: Sequence[Peer],
        p: float,
    ) -> dict[str, Any]:
        conf = self._confidence(rng, same(answer, gold), p)
        if peers and 2 * sum(same(q.answer, answer) for q in peers) > len(peers):
            conf = min(5, conf + 1)  # agreement emboldens
        return {"reasoning": "", "answer": answer, "confidence": conf}

    def _critique(self, rng: np.random.Generator, h: Hints, own: str, conf: int) -> dict[str, Any]:
        reviews = [review(rng, j, a, own) for j, a in h.sources]
        for r in reviews:  # no seat identity in the text: "this answer", not "Agent 2"
            r["correction"] = str(r["correction"]).replace(f"Agent {r['target']} ", "This response ")
        return {"reviews": reviews, "answer": own, "confidence": conf}
