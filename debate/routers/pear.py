"""PEAR's state-aware router (`papers/pear.txt` §4, App. C.1), as `specs/methods.md` §PEAR settles it;
defaults follow the authors' code.

Per round r >= 1, on the round r-1 state (answers compared in canonical form; as in the authors'
scorer, an edge with a missing answer at either end is never a disagreement):
1. Base role graph B: every role gets exactly `k` sources drawn uniformly from the other roles
   (in-degree k, out-degrees uneven). Drawn ONCE per episode, from `DebateState.routing_seed` (a
   per-episode seed the loop sets), so it is the same graph in every round.
2. Candidates (`candidates="relabel"`): B itself plus `mc_permutations - 1` uniformly random
   role->agent permutations of it (duplicates allowed). `"fresh"`: `mc_permutations` independently
   drawn in-degree-k graphs. Both come from the round's `rng`.
3. Scores of a candidate edge set E, m = |E|, each in [0, 1]:
     T(E) = (1/m) sum_{(s,t) in E} 1[y_s != y_t] 1[c_s >= tau_src] 1[c_t <= tau_tgt]
     I(E) = (1/m) sum_s rho_s outdeg_s(E)              (= (1/m) sum_{(s,t) in E} rho_s)
     L(E) = (1/(m tau_low)) sum_{(s,t) in E} max(0, tau_low + 1 - c_s)
   S(E) = a_T T - a_I I - a_L L, with a_X = alpha_x if use_x else 0. `normalize_terms=False` drops
   the 1/m and 1/(m tau_low) factors (the terms are then counts, not in [0, 1]).
4. Selection: sample from softmax(S / selection_temperature) (named so that it cannot be taken for
   the sampling temperature of the models); 0 is argmax with ties broken by the rng; all three
   a_X = 0 is a uniform pick (the `pear_uniform` control).
5. Influence rho (`influence_history`): rho^0 = 1/n (`rho_init="uniform"`, code) or 0 (`"zero"`, the
   paper's text); after round r, rho_s <- beta rho_s + (1 - beta) a_s, where a_s is the share of s's
   targets whose new answer equals s's previous answer (`influence="adoption"`, code) or whose
   revision ACCEPTed s's critique (`"accept"`, the paper's text; an unreadable verdict is not an
   acceptance); a_s = 0 when s had no targets. rho is recomputed from the stored rounds each time, so
   the router stays a pure function of the state. `adopt_missing=True` reproduces the authors' code
   where it differs from ours: there a target left with no answer counts as adopting a source that
   had none (ours never counts a missing answer as adoption).
6. The decision record of each round holds the influence rule (diagnostics read it from there), rho
   before the round, the chosen candidate's index and its T, I, L and S.

Everything here depends on agent labels only through the state, so relabeling the agents (and the
router's draws with them) relabels the chosen graph (Theorem 1; tested in tests/test_pear_equivariance.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from debate.decision import Decision
from debate.graph import Graph
from debate.influence import InfluenceRule, influence_history
from debate.registry import method
from debate.state import DebateState


def _codes(answers: Sequence[str | None]) -> np.ndarray:
    """Answers as integers for vectorized comparison; missing answers get negative codes."""
    seen: dict[str, int] = {}
    return np.array(
        [seen.setdefault(a, len(seen)) if a is not None else -1 - i for i, a in enumerate(answers)],
        dtype=np.int64,
    )


def score_terms(
    answers: Sequence[str | None],
    confidences: Sequence[int],
    rho: np.ndarray,
    src: np.ndarray,
    tgt: np.ndarray,
    tau_src: int = 4,
    tau_tgt: int = 3,
    tau_low: int = 3,
    normalize: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(T, I, L), one value per candidate: `src`/`tgt` are (candidates, m) arrays of edge ends."""
    src, tgt = np.atleast_2d(src), np.atleast_2d(tgt)
    m = src.shape[1]
    if m == 0:
        zero = np.zeros(src.shape[0])
        return zero, zero, zero
    y, c = _codes(answers), np.asarray(confidences)
    differ = (y[src] != y[tgt]) & (y[src] >= 0) & (y[tgt] >= 0)
    t = (differ & (c[src] >= tau_src) & (c[tgt] <= tau_tgt)).sum(axis=1).astype(float)
    i = np.asarray(rho, dtype=float)[src].sum(axis=1)
    low = np.maximum(0, tau_low + 1 - c[src]).sum(axis=1).astype(float)
    if normalize:
        return t / m, i / m, low / (m * tau_low)
    return t, i, low


def in_degree_edges(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(sources, targets) of a graph where each node draws `k` distinct sources among the others."""
    k = min(k, n - 1)
    src = [int(s) for t in range(n) for s in rng.choice([o for o in range(n) if o != t], k, replace=False)]
    return np.array(src, dtype=np.int64), np.repeat(np.arange(n, dtype=np.int64), k)


@dataclass(frozen=True)
class Pool:
    """Candidate graphs as edge arrays: candidate j has edges `src[j, e] -> tgt[j, e]`."""

    n: int
    src: np.ndarray = field(repr=False)
    tgt: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return int(self.src.shape[0])

    def graph(self, j: int) -> Graph:
        return Graph(self.n, zip(self.src[j].tolist(), self.tgt[j].tolist(), strict=True))

    def relabel(self, perm: Sequence[int]) -> Pool:
        """Every candidate with agent i renamed perm[i]."""
        p = np.asarray(perm, dtype=np.int64)
        return Pool(self.n, p[self.src], p[self.tgt])


def needs_verdicts(args: Mapping[str, Any]) -> None:
    """`influence: accept` reads critique verdicts, which only `critique_revise` has."""
    if args["influence"] == "accept" and args["protocol"] != "critique_revise":
        raise ValueError(
            "pear: influence 'accept' reads critique verdicts; it needs protocol critique_revise"
        )


@method(
    "pear",
    protocol="critique_revise",
    check=needs_verdicts,
    summary="PEAR: critiques routed by trust, influence and doubt",
)
@dataclass(frozen=True)
class PearRouter:
    """PEAR (see the module docstring for every argument's role)."""

    k: int = 2
    mc_permutations: int = 100
    candidates: str = "relabel"  # | "fresh"
    alpha_t: float = 0.2
    alpha_i: float = 0.7
    alpha_l: float = 0.7
    tau_src: int = 4
    tau_tgt: int = 3
    tau_low: int = 3
    normalize_terms: bool = True
    selection_temperature: float = 0.7
    beta: float = 0.6
    influence: str = "adoption"
    rho_init: str = "uniform"
    adopt_missing: bool = False
    use_t: bool = True
    use_i: bool = True
    use_l: bool = True
    # Episode ids hash a method's arguments: the rename and the later argument keep stored ids valid.
    RENAMED: ClassVar[dict[str, str]] = {"selection_temperature": "temperature"}
    ADDED: ClassVar[dict[str, Any]] = {"adopt_missing": False}

    def __post_init__(self) -> None:
        self.rule  # noqa: B018 - builds the InfluenceRule, which raises on a bad beta, mode or init
        if self.k < 1 or self.mc_permutations < 1 or self.tau_low < 1:
            raise ValueError("pear: k, mc_permutations and tau_low must be >= 1")
        if self.candidates not in ("relabel", "fresh"):
            raise ValueError(f"pear: candidates must be 'relabel' or 'fresh', got '{self.candidates}'")
        if self.selection_temperature < 0 or min(self.alpha_t, self.alpha_i, self.alpha_l) < 0:
            raise ValueError("pear: selection_temperature and the alphas must be >= 0")

    @property
    def rule(self) -> InfluenceRule:
        return InfluenceRule(self.beta, self.influence, self.rho_init, self.adopt_missing)

    @property
    def alphas(self) -> tuple[float, float, float]:
        """(a_T, a_I, a_L) after the ablation switches."""
        return (self.alpha_t * self.use_t, self.alpha_i * self.use_i, self.alpha_l * self.use_l)

    def base_edges(self, state: DebateState) -> tuple[np.ndarray, np.ndarray]:
        """The episode's base role graph: a function of the per-episode routing seed only."""
        return in_degree_edges(state.n, self.k, np.random.default_rng([state.routing_seed, 0x9EA2]))

    def pool(self, state: DebateState, rng: np.random.Generator) -> Pool:
        """This round's candidates (draws from `rng`)."""
        n, size = state.n, self.mc_permutations
        if self.candidates == "fresh":
            drawn = [in_degree_edges(n, self.k, rng) for _ in range(size)]
            return Pool(n, np.stack([s for s, _ in drawn]), np.stack([t for _, t in drawn]))
        bsrc, btgt = self.base_edges(state)
        shuffled = rng.permuted(np.tile(np.arange(n), (size - 1, 1)), axis=1)  # each row on its own
        perms = np.concatenate([np.arange(n)[None, :], shuffled])
        return Pool(n, perms[:, bsrc], perms[:, btgt])

    def terms(self, state: DebateState, pool: Pool, rho: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """(T, I, L, S) for every candidate, on the latest round's answers, confidences and influence
        `rho` (computed from the state when not given)."""
        rho = influence_history(state, self.rule)[-1] if rho is None else rho
        t, i, low = score_terms(
            state.answers(),
            state.confidences(),
            rho,
            pool.src,
            pool.tgt,
            self.tau_src,
            self.tau_tgt,
            self.tau_low,
            self.normalize_terms,
        )
        a_t, a_i, a_l = self.alphas
        return t, i, low, a_t * t - a_i * i - a_l * low

    def scores(self, state: DebateState, pool: Pool) -> np.ndarray:
        """S for every candidate."""
        return self.terms(state, pool)[3]

    def choose(
        self, state: DebateState, pool: Pool, rng: np.random.Generator, s: np.ndarray | None = None
    ) -> int:
        """The index of the selected candidate (one draw from `rng`); `s`: the scores, if known."""
        if not any(self.alphas):
            return int(rng.integers(len(pool)))
        s = self.scores(state, pool) if s is None else s
        if self.selection_temperature == 0:
            return int(rng.choice(np.flatnonzero(s >= s.max() - 1e-12)))
        p = np.exp((s - s.max()) / self.selection_temperature)
        return int(rng.choice(len(pool), p=p / p.sum()))

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        rule = asdict(self.rule)
        if state.n < 2:
            return Decision(Graph(state.n), record={"influence": rule})
        pool = self.pool(state, rng)
        rho = influence_history(state, self.rule)[-1]
        t, i, low, s = self.terms(state, pool, rho)
        j = self.choose(state, pool, rng, s)
        record = {
            "influence": rule,
            "rho": rho.round(6).tolist(),
            "candidate": j,
            "T": float(t[j]),
            "I": float(i[j]),
            "L": float(low[j]),
            "S": float(s[j]),
        }
        return Decision(pool.graph(j), record=record)
