"""Debate diagnostics for every method, every round (PEAR App. C.4, extended), computed from a finished
episode's `DebateState`: its views (canonical answers and confidences after each round), graphs and
turns (token counts, critiques, verdicts). Pure; `None` marks a quantity with no denominator.

Notation: y_i^r, c_i^r the answer and confidence of agent i at the end of round r (an unparsable reply
keeps the previous answer, so these are the views the vote uses); right_i^r = 1[y_i^r is graded
correct]; E^r the round-r graph (s -> t: t sees, or is critiqued by, s). Per round r >= 1:

- W2R = #{i: not right_i^{r-1}, right_i^r} / #{i: not right_i^{r-1}}   (wrong-to-right rate)
- R2W = #{i: right_i^{r-1}, not right_i^r} / #{i: right_i^{r-1}}      (right-to-wrong rate)
- Net = W2R - R2W, an undefined rate counting 0 (None only if both are undefined)
- Cross-Ans = #{(s,t) in E^r: y_s^{r-1} != y_t^{r-1}} / |E^r|  (two missing answers agree, as in the
  authors' code)
- Src Conf = mean over (s,t) in E^r of (c_s^{r-1} - 1) / 4, confidence 1..5 scaled onto [0, 1]
- acceptance = #ACCEPT verdicts / #readable verdicts, over the critiques of the round (only the
  `critique_revise` protocol has critiques; `critiques` counts those delivered, `verdicts` those whose
  ACCEPT/REJECT could be read)
- influence entropy = -sum_i p_i log p_i / log n with p = rho^r / sum rho^r, where rho follows PEAR's
  influence rule (debate.influence.InfluenceRule). For PEAR it is the router's own rule (read from its
  decision records); for every other method the default rule (beta 0.6, adoption, rho^0 = 1/n) applied to that method's graphs, so
  the number is comparable across methods (as in PEAR's Table 3). Methods without rounds keep rho^0
  uniform: 1.0 (PEAR App. C.4 notes CoT-SC's nominal 1.000). None for n = 1.
- answer entropy = -sum_a q_a log2 q_a over the shares q_a of the agents' answers (bits; missing answers
  are left out, as in the authors' code; none at all: 0); agreement = the share of all agents holding
  the plurality answer (debate.vote.plurality_share)
- changed = #{i: y_i^r != y_i^{r-1}}; calls and tokens (prompt + completion, as the engine reported)
  of every call of the round.
Round 0 has the state columns (correct, entropies, agreement, tokens) and None for the flip and edge
rates. The episode summary pools the counts over rounds 1..R (W2R = sum of W2R numerators / sum of
denominators, and likewise Cross-Ans, Src Conf (edge-weighted) and acceptance); influence entropy,
answer entropy and agreement are the final round's.

Where the authors' code (EVIEHub/PEAR `metrics/diagnostics.py`) differs: its W2R / R2W compare each
agent's round-0 and final answers only (here: every round's transitions, pooled, as App. C.4 writes
them; the round rows give both views), and it counts a revision with no readable verdicts as
REJECTing every critique (here: unknown, left out of `acceptance`; `critiques - verdicts` counts them).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from actors.frozen import quick_init
from debate.influence import InfluenceRule, influence_history, rule_of
from debate.state import DebateState, View
from debate.trajectory import EpisodeResult
from debate.vote import plurality_share


@quick_init
@dataclass(frozen=True)
class RoundDiagnostics:
    """One round of one episode (a row of the `rounds/` table, less its episode id)."""

    round: int
    agents: int
    correct: int
    changed: int | None
    w2r_count: int | None
    wrong_before: int | None
    r2w_count: int | None
    right_before: int | None
    w2r: float | None
    r2w: float | None
    net: float | None
    edges: int
    cross_edges: int
    cross_ans: float | None
    src_conf: float | None
    critiques: int
    verdicts: int
    accepted: int
    acceptance: float | None
    influence_entropy: float | None
    answer_entropy: float
    agreement: float
    calls: int
    tokens: int


_ROUND_FIELDS = tuple(f.name for f in fields(RoundDiagnostics))

SUMMARY_COLUMNS = (
    "w2r",
    "r2w",
    "net",
    "w2r_count",
    "r2w_count",
    "changed",
    "cross_ans",
    "src_conf",
    "critiques",
    "verdicts",
    "accepted",
    "acceptance",
    "influence_entropy",
    "answer_entropy",
    "agreement",
)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _net(w2r: float | None, r2w: float | None) -> float | None:
    return None if w2r is None and r2w is None else (w2r or 0.0) - (r2w or 0.0)


def answer_entropy(answers: Sequence[str | None]) -> float:
    """Shannon entropy in bits of the shares of the answers given (missing ones left out)."""
    counts = Counter(a for a in answers if a is not None)
    n = sum(counts.values())
    h = -sum(c / n * math.log2(c / n) for c in counts.values())
    return float(h) + 0.0  # + 0.0 turns the -0.0 of a unanimous round into 0.0


def influence_entropy(rho: np.ndarray) -> float | None:
    """Normalized entropy of rho / sum(rho); None when n = 1 or rho is all zero."""
    total = float(rho.sum())
    if len(rho) < 2 or total <= 0:
        return None
    p = rho[rho > 0] / total
    return min(1.0, float(-(p * np.log(p)).sum() / math.log(len(rho))))  # float noise can pass 1


def _edge_stats(before: Sequence[View], edges: Sequence[tuple[int, int]]) -> tuple[int, float | None]:
    """(edges whose ends disagree, mean scaled source confidence) on the previous round's views."""
    cross = sum(before[s].answer != before[t].answer for s, t in edges)
    conf = _ratio(sum((before[s].confidence - 1) / 4 for s, _ in edges), len(edges))
    return cross, conf


def _round(state: DebateState, r: int, right: list[list[bool]], rho: np.ndarray) -> RoundDiagnostics:
    views, turns, graph = state.views[r], state.turns[r], state.graphs[r]
    answers = [v.answer for v in views]
    verdicts = [v for t in turns if t.phase == "revise" for v in t.extra.get("verdicts", {}).values()]
    base: dict[str, Any] = {
        "round": r,
        "agents": state.n,
        "correct": sum(right[r]),
        "critiques": sum(len(t.sources) for t in turns if t.phase == "critique"),
        "verdicts": len(verdicts),
        "accepted": verdicts.count("ACCEPT"),
        "acceptance": _ratio(verdicts.count("ACCEPT"), len(verdicts)),
        "influence_entropy": influence_entropy(rho),
        "answer_entropy": answer_entropy(answers),
        "agreement": plurality_share(answers),
        "calls": len(turns),
        "tokens": sum(t.prompt_tokens + t.completion_tokens for t in turns),
    }
    if r == 0:
        return RoundDiagnostics(
            **base,
            changed=None,
            w2r_count=None,
            wrong_before=None,
            r2w_count=None,
            right_before=None,
            w2r=None,
            r2w=None,
            net=None,
            edges=0,
            cross_edges=0,
            cross_ans=None,
            src_conf=None,
        )
    prev, now = right[r - 1], right[r]
    w2r_count = sum(not a and b for a, b in zip(prev, now, strict=True))
    r2w_count = sum(a and not b for a, b in zip(prev, now, strict=True))
    wrong_before = prev.count(False)
    w2r, r2w = _ratio(w2r_count, wrong_before), _ratio(r2w_count, state.n - wrong_before)
    edges = graph.sorted_edges() if graph is not None else []
    cross, conf = _edge_stats(state.views[r - 1], edges)
    before = state.views[r - 1]
    return RoundDiagnostics(
        **base,
        changed=sum(before[i].answer != views[i].answer for i in range(state.n)),
        w2r_count=w2r_count,
        wrong_before=wrong_before,
        r2w_count=r2w_count,
        right_before=state.n - wrong_before,
        w2r=w2r,
        r2w=r2w,
        net=_net(w2r, r2w),
        edges=len(edges),
        cross_edges=cross,
        cross_ans=_ratio(cross, len(edges)),
        src_conf=conf,
    )


def _summary(rounds: Sequence[RoundDiagnostics]) -> dict[str, Any]:
    """The episode's pooled diagnostics (the episodes table's diagnostic columns)."""
    later = rounds[1:]
    # getattr: a round's own dataclass fields, summed by name
    total = lambda key: sum(getattr(d, key) or 0 for d in later)  # noqa: E731
    w2r = _ratio(total("w2r_count"), total("wrong_before"))
    r2w = _ratio(total("r2w_count"), total("right_before"))
    conf_sum = sum((d.src_conf or 0.0) * d.edges for d in later)
    last = rounds[-1]
    return {
        "w2r": w2r,
        "r2w": r2w,
        "net": _net(w2r, r2w),
        "w2r_count": total("w2r_count"),
        "r2w_count": total("r2w_count"),
        "changed": total("changed"),
        "cross_ans": _ratio(total("cross_edges"), total("edges")),
        "src_conf": _ratio(conf_sum, total("edges")),
        "critiques": total("critiques"),
        "verdicts": total("verdicts"),
        "accepted": total("accepted"),
        "acceptance": _ratio(total("accepted"), total("verdicts")),
        "influence_entropy": last.influence_entropy,
        "answer_entropy": last.answer_entropy,
        "agreement": last.agreement,
    }


@dataclass(frozen=True)
class Diagnostics:
    """Per-round rows (round 0 first) and the episode summary."""

    rounds: list[RoundDiagnostics]
    summary: dict[str, Any]

    def round_rows(self) -> list[dict[str, Any]]:
        # Every field is a scalar: `asdict` would only add its deep copy.
        return [{f: getattr(d, f) for f in _ROUND_FIELDS} for d in self.rounds]


def diagnose(
    state: DebateState, is_correct: Callable[[str], bool], rule: InfluenceRule | None = None
) -> Diagnostics:
    """Every round's diagnostics; `is_correct` grades one canonical answer (a missing one is wrong).
    The influence rule is `rule`, else the one the state's decisions record (`debate.influence`)."""
    graded: dict[str, bool] = {}

    def right_(answer: str | None) -> bool:
        if answer is None:
            return False
        if answer not in graded:
            graded[answer] = is_correct(answer)
        return graded[answer]

    return _diagnose(state, [[right_(v.answer) for v in views] for views in state.views], rule)


def diagnose_episode(result: EpisodeResult) -> Diagnostics:
    """The diagnostics of a finished episode, from the correctness its trajectory already graded."""
    return _diagnose(result.state, [list(r.correct_after) for r in result.trajectory], None)


def _diagnose(state: DebateState, right: list[list[bool]], rule: InfluenceRule | None) -> Diagnostics:
    rhos = influence_history(state, rule or rule_of(state))
    rounds = [_round(state, r, right, rhos[r]) for r in range(state.round)]
    return Diagnostics(rounds, _summary(rounds))
