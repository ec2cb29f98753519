"""Simulated agent population: a `Backend` whose agents behave like LLM debaters, with no model at all.

Like inspect_ai's mockllm, but behaviourally meaningful, so routers can be compared. A reply is a pure
function of (model, request seed, hints): the rng is seeded by the request seed, a stable hash of the
model name and the call's identity (item, agent, round, phase) — never the peers, so routers that show
an agent different peers still use common random numbers. Behaviour per request (hints: see `Hints`):
- Item profile, shared by all agents and models (stable hash of (item, gold)): difficulty d in [0, 1]
  and `distractors` wrong answers (numeric: gold±1, ±2, ±10, ×2, ×10, /2, non-negative if gold is;
  choice: the other letters) with fixed popularities, so wrong agents often agree on a misconception.
- Round 0 ("initial", "sample", unknown phases): right with probability
  clip(skill - 0.3 (d - 0.5), 0.02, 0.98), else a distractor drawn by popularity.
- Confidence 1..5: at rate `calibration` from overlapping distributions (right: mostly 4-5, wrong:
  mostly 1-3), else uniform; after a debate round, +1 when most peers agree.
- "update"/"revise" with peers: an answer's support = the peers' confidences behind it (plus own
  confidence for the own answer). Switch to the best-supported alternative with probability
  (1 - stubbornness) min(1, 2 pull share) (0.75 if own is right), share = its support / (its + own).
  A wrong agent not swayed may still adopt a gold some peer holds ((1 - stubbornness) 0.15 skill) or
  self-correct ((1 - stubbornness) 0.05 skill). No peers: fix a wrong answer with probability
  (1 - stubbornness) 0.1 skill, break a right one with (1 - stubbornness) 0.03 (1 - skill).
- "critique": `{"reviews": [{"target": id, "assessment", "step_loc", "correction"} per target], "answer":
  own, "confidence": c}` (PEAR E.5's shape; a target with no answer gets a review too).
- "revise": the reply also carries E.4's `critique_response`: ACCEPT each critic whose answer the agent
  ends on, REJECT the others (so acceptance tracks who persuaded whom). No gold in the hints (missing
  or garbled): a blind guess (a random letter or small integer), any confidence.
- Text: `{"reasoning", "answer", "confidence"}` JSON, bare or in a ```json fence (sometimes with a
  sentence after it); at `malformed_rate`: truncated JSON (finish "length"), prose, or no confidence.
  (The wording lives in `actors.sim_text`; this module decides.)
- Tokens: prompt = ceil(message chars * tokens_per_char) + 4 per message; completion likewise (cut at
  `max_tokens`: finish "length"). `latency_s` > 0: one `asyncio.sleep` per batch, wall time reported.
- `verbosity` v > 0: the reasoning gets Poisson(v) more worked-step sentences (`actors.sim_text`),
  drawn from a separate stream, so a verbose agent gives the same answers, only longer replies
  (real models' replies run to hundreds of tokens; a cap then cuts the answer off). 0: none.
- An adversarial seat (hint `adversary`: it was shown the gold and told to argue for a wrong answer)
  always answers the item's most common misconception with confidence 4-5, in persuasive wording,
  and reviews every other answer as flawed.

This is population model `v1`. `population: <name or .yaml path>` (with `member`) hands every call to
a population file's model instead (`actors.population`, `docs/population.md`).
"""

from __future__ import annotations

import asyncio
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from actors.base import ChatRequest, Completion, Timer
from actors.registry import Traits, backend
from actors.sim_hints import Hints
from actors.sim_items import CONF_RIGHT as _CONF_RIGHT
from actors.sim_items import CONF_UNIFORM as _CONF_UNIFORM
from actors.sim_items import CONF_WRONG as _CONF_WRONG
from actors.sim_items import LETTERS as _LETTERS
from actors.sim_items import item_profile
from actors.sim_items import popularity as _popularity
from actors.sim_items import stable_hash as stable_hash  # re-exported: callers import it from here
from actors.sim_seed import seeded
from actors.sim_text import elaborate, payload, render, same


def check_args(
    model: str,
    skill: float,
    calibration: float,
    pull: float,
    stubbornness: float,
    malformed_rate: float,
    distractors: int,
    tokens_per_char: float,
    latency_s: float,
    verbosity: float = 0.0,
    population: str = "v1",
    member: str = "",
) -> None:
    """The ranges of the engine's arguments (ValueError naming the argument)."""
    if population != "v1":
        _check_population(model, population, member, locals())
    unit = dict(skill=skill, calibration=calibration, pull=pull, stubbornness=stubbornness)
    for name, v in {**unit, "malformed_rate": malformed_rate}.items():
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"args.{name}: must be in [0, 1], got {v}")
    if isinstance(distractors, bool) or not isinstance(distractors, int) or not 1 <= distractors <= 20:
        raise ValueError(f"args.distractors: must be an int in [1, 20], got {distractors}")
    if not 0 < tokens_per_char <= 100:
        raise ValueError(f"args.tokens_per_char: must be in (0, 100], got {tokens_per_char}")
    if not 0 <= latency_s <= 3600:
        raise ValueError(f"args.latency_s: must be in [0, 3600] seconds, got {latency_s}")
    if not 0 <= verbosity <= 100:
        raise ValueError(f"args.verbosity: must be in [0, 100] sentences, got {verbosity}")
    if not isinstance(model, str) or not model:
        raise ValueError("model must be a non-empty string")


_V1_ONLY = dict(
    skill=0.6,
    calibration=0.8,
    pull=0.5,
    stubbornness=0.3,
    malformed_rate=0.02,
    distractors=3,
    tokens_per_char=0.25,
    verbosity=0.0,
)


def _check_population(model: str, population: str, member: str, given: dict[str, Any]) -> None:
    """A population file's model reads its members' parameters, not the v1 arguments: the file must
    load, name the member, and no v1 argument may be set beside it (it would be silently ignored)."""
    from actors.populations import PopulationError, load

    for name, default in _V1_ONLY.items():
        if given[name] != default:
            raise ValueError(
                f"args.{name}: population '{population}' takes its members' parameters from its file; "
                f"remove {name} (it is read only by population v1)"
            )
    try:
        pop = load(population)
    except PopulationError as e:
        raise ValueError(str(e)) from None
    if not member:
        raise ValueError(
            f"args.member: required with a population file; '{population}' has: {', '.join(pop.members)}"
        )
    try:
        pop.member(member)
    except PopulationError as e:
        raise ValueError(str(e)) from None


@backend(
    "simulated",
    check=check_args,
    traits=Traits(simulated=True, reads_gold=True, in_process=True, population_arg="population"),
)
class SimulatedBackend:
    """A population of simulated debaters served under one model name (see the module docstring)."""

    def __init__(
        self,
        model: str,
        skill: float = 0.6,
        calibration: float = 0.8,
        pull: float = 0.5,
        stubbornness: float = 0.3,
        malformed_rate: float = 0.02,
        distractors: int = 3,
        tokens_per_char: float = 0.25,
        latency_s: float = 0.0,
        verbosity: float = 0.0,
        population: str = "v1",
        member: str = "",
    ) -> None:
        check_args(
            model,
            skill,
            calibration,
            pull,
            stubbornness,
            malformed_rate,
            distractors,
            tokens_per_char,
            latency_s,
            verbosity,
            population,
            member,
        )
        self._v2: Any = None
        if population != "v1":  # a population file's model (`actors.population`) answers instead
            from actors.population import PopulationBackend
            from actors.populations import load

            self._v2 = PopulationBackend(model, load(population), member, latency_s)
        self.model, self.skill, self.calibration, self.pull = model, skill, calibration, pull
        self.stubbornness, self.malformed_rate, self.distractors = stubbornness, malformed_rate, distractors
        self.tokens_per_char, self.latency_s, self.verbosity = tokens_per_char, latency_s, verbosity
        self._model_key = stable_hash("model", model)

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One completion per request, in order; awaits `latency_s` once per batch when it is > 0."""
        if self._v2 is not None:
            return await self._v2.generate(requests)
        with Timer() as timer:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            out = [self._complete(r) for r in requests]
        if self.latency_s > 0:  # zero latency reports 0.0, keeping completions exactly reproducible
            out = [replace(c, latency_s=timer.elapsed) for c in out]
        return out

    def _complete(self, req: ChatRequest) -> Completion:
        h = Hints.read(req.hints)
        seed = int(req.seed or 0) & (2**64 - 1)  # negative or oversized seeds still seed
        # `seeded` is `np.random.default_rng` at half the cost; its generator is reused by the next
        # call, so the elaboration below (used while `rng` still is) seeds its own with numpy.
        rng = seeded([seed, self._model_key, stable_hash(h.item, h.agent, h.round, h.phase)])
        fields = self._decide(rng, h)
        if self.verbosity > 0 and "reasoning" in fields:  # its own stream: the same answers, longer
            fields["reasoning"] = elaborate(
                np.random.default_rng([seed, self._model_key, 0x7E5B]), fields["reasoning"], self.verbosity
            )
        text, finish = render(rng, fields, self.malformed_rate)
        completion_tokens = math.ceil(len(text) * self.tokens_per_char)
        if completion_tokens > max(1, req.max_tokens):  # what an engine does at its token limit
            text, finish = text[: int(max(1, req.max_tokens) / self.tokens_per_char)], "length"
            completion_tokens = math.ceil(len(text) * self.tokens_per_char)
        chars = sum(len(m.content) for m in req.messages)
        prompt_tokens = math.ceil(chars * self.tokens_per_char) + 4 * len(req.messages)
        return Completion(text, prompt_tokens, completion_tokens, finish_reason=finish, model=self.model)

    def _decide(self, rng: np.random.Generator, h: Hints) -> dict[str, Any]:
        """The reply's content (reasoning, answer, confidence; critiques for a critique call)."""
        if h.gold is None:  # no gold knowledge: a blind guess
            guess = _LETTERS[int(rng.integers(h.n_choices))] if h.kind == "choice" else str(rng.integers(100))
            return payload(rng, h, "blind", guess, int(rng.integers(1, 6)))
        difficulty, wrong = item_profile(h.item, h.gold, h.kind, h.n_choices, self.distractors)
        if h.adversary:  # argues for the common misconception whatever it is shown
            tag = "critique" if h.phase == "critique" else "adversary"
            return payload(rng, h, tag, wrong[0], 4 + int(rng.random() < 0.5))
        u = rng.random(5).tolist()  # drawn up front: the same numbers whatever branch the peers lead to
        right = partial(same, b=h.gold)
        popularity = _popularity(len(wrong))
        slip = wrong[bisect_right(popularity, u[1] * popularity[-1])]
        p0 = min(0.98, max(0.02, self.skill - 0.3 * (difficulty - 0.5)))
        fresh = h.gold if u[0] < p0 else slip  # the round-0 answer
        if h.phase not in ("update", "revise", "critique"):
            return payload(rng, h, "initial", fresh, self._confidence(rng, right(fresh)))
        own = h.own[0] if h.own and h.own[0] is not None else fresh  # none readable before: start afresh
        own_conf = h.own[1] if h.own else 3
        if h.phase == "critique":
            return payload(rng, h, "critique", own, self._confidence(rng, right(own)))
        move, tag, answer = 1.0 - self.stubbornness, "kept", own
        support = {a: sum(c for b, c in h.peers if b == a) for a, _ in h.peers}
        alts = [(s, a) for a, s in support.items() if not same(a, own)]
        s_best, best = max(alts, default=(0, own))  # no alternative: share 0, never switches
        share = s_best / (s_best + own_conf + support.get(own, 0))
        if u[2] < move * min(1.0, 2 * self.pull * share) * (0.75 if right(own) else 1.0):
            tag, answer = "switched", best
        if tag == "kept" and not right(own):
            seen_gold = any(right(a) for a, _ in h.peers)
            fix = (0.15 * seen_gold + 0.05) * self.skill if h.peers else 0.1 * self.skill
            if u[3] < move * fix:
                tag, answer = ("switched" if seen_gold else "fixed"), h.gold
        elif tag == "kept" and not h.peers and u[4] < move * 0.03 * (1 - self.skill):
            tag, answer = "fixed", slip  # self-refinement that talks itself out of a right answer
        conf = self._confidence(rng, right(answer))
        if h.peers and 2 * sum(same(a, answer) for a, _ in h.peers) > len(h.peers):
            conf = min(5, conf + 1)  # agreement emboldens
        return payload(rng, h, tag, answer, conf)

    def _confidence(self, rng: np.random.Generator, correct: bool) -> int:
        p = (_CONF_RIGHT if correct else _CONF_WRONG) if rng.random() < self.calibration else _CONF_UNIFORM
        return min(5, bisect_right(p, rng.random() * p[-1]) + 1)
