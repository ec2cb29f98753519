"""CPP, conditional progressive pruning (`specs/methods.md` §CPP), and its random-pruning baseline.

In debate round t each agent i decides, in its fixed order (itself first, then the others by index;
`debate.cpp_reward.order`), whether to keep each previous-round response. Decision k is a Bernoulli
whose probability comes from the FuseGLU network (`debate.policies.fuseglu`) over i's behaviour
embedding, the query — the question followed by the responses i already kept this round — and the
candidate response, all embedded by the policy's sentence encoder (`debate.encoders`). What i keeps
is what it sees: the kept others are the round's edges into i, and a pruned own response is hidden
from i's `update` prompt (`Decision.hidden_own`). The decision record holds, per agent and position,
`[candidate, kept, p]`, the log-probability of the draws, and (in memory only) the embeddings a
trainer needs. Training samples each decision with the episode's router rng; evaluation keeps a
response when p >= `threshold` (no draw, so a checkpoint gives the same episodes under a seed).

Output truncation (App. C): with `truncate` = q in (0, 1], every round but the last (round 0
included, through `opening`) caps each seat's output at the q-quantile of that seat's output lengths
on the validation questions the checkpoint's behaviour embeddings came from; the last round is never
capped. `truncate_seats` gives each seat its own quantile instead, in seat order, "/"-separated (the
paper's q85/q95/q95 for Grok/GPT/Mistral is "0.85/0.95/0.95" on a team seated in that order).
`checkpoint` names a policy file (`sweep train` with method cpp writes them; ids hash its content);
`""` is the untrained network from `init_seed`, embedding with `encoder` (`hashed` unless given),
which has no output lengths to truncate by. `author_tag`: whether the response texts the policy reads
start with their author ("Agent 2") — true for every policy made before the option, false for the
paper's main method (it encodes the response alone); null (the default) takes the checkpoint's
setting (an untrained network: true), an explicit value must match it. `protocol` must be `update`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from debate.cpp_reward import order
from debate.decision import Decision
from debate.graph import Graph
from debate.policies import checkpoint as ckpt
from debate.policies.pruning import cues_of
from debate.registry import method
from debate.state import DebateState, View

MAX_RESPONSE_CHARS = 1200  # what of one response is embedded (the prompts show at most 600 of it)


def _update_only(args: Mapping[str, Any]) -> None:
    if args.get("protocol") != "update":
        raise ValueError(
            "method cpp: each agent's kept responses are its update prompt; use protocol 'update'"
        )


def response_text(view: View, author: int, tag: bool = True) -> str:
    """A previous-round response as the policy reads it: as the `update` prompt shows it, headed by
    its author ("Agent 2") when `tag`. The author is ours (the paper encodes "the response"): it lets
    an agent's behaviour embedding — initialised from replies headed by its own name — tell its own
    response from the others', which the decision order alone does not give the network; it is also a
    seat tell, a shortcut past the content, so the main method's policies read responses without it."""
    answer = view.answer if view.answer is not None else "(no answer)"
    reasoning = view.reasoning.strip()[:MAX_RESPONSE_CHARS]
    head = f"Agent {author + 1}\n" if tag else ""
    return f"{head}Answer: {answer}\nConfidence: {view.confidence}\nReasoning: {reasoning}"


def seat_quantiles(spec: str) -> tuple[float, ...]:
    """`truncate_seats` ("0.85/0.95/0.95") as quantiles; ValueError naming the field and the fix."""
    try:
        qs = tuple(float(x) for x in spec.split("/"))
    except ValueError:
        qs = ()
    if not qs or not all(0.0 < q <= 1.0 for q in qs):
        raise ValueError(
            f"cpp: truncate_seats must be one quantile in (0, 1] per seat, '/'-separated (e.g. "
            f"'0.85/0.95/0.95'), got '{spec}'"
        )
    return qs


def query_text(question: str, kept: Sequence[str]) -> str:
    """q: the question, then the responses kept so far this round."""
    return "\n\n".join([question, *kept])


@method("cpp", check=_update_only, summary="CPP: a trained policy prunes what each agent sees")
@dataclass(frozen=True)
class CppRouter:
    """CPP (see the module docstring for each argument)."""

    checkpoint: str = ""
    init_seed: int = 0
    encoder: str = ""
    truncate: float = 0.0
    threshold: float = 0.5
    author_tag: bool | None = None
    truncate_seats: str = ""
    LABEL: ClassVar[tuple[str, ...]] = ("truncate",)
    # arguments added after episodes were stored: ids leave them out while they hold these values
    ADDED: ClassVar[dict[str, Any]] = {"author_tag": None, "truncate_seats": ""}

    def __post_init__(self) -> None:
        if not 0.0 <= self.truncate <= 1.0:
            raise ValueError(f"cpp: truncate must be a quantile in (0, 1] or 0 (off), got {self.truncate}")
        if self.truncate_seats:
            seat_quantiles(self.truncate_seats)
            if self.truncate:
                raise ValueError(
                    "cpp: give truncate (one quantile) or truncate_seats (one per seat), not both"
                )
        if self.author_tag is not None and not isinstance(self.author_tag, bool):
            raise ValueError(f"cpp: author_tag must be true, false or null, got {self.author_tag!r}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"cpp: threshold must be in (0, 1), got {self.threshold}")
        if self.encoder not in ("", "hashed", "minilm"):
            raise ValueError(f"cpp: unknown encoder '{self.encoder}'; known: hashed, minilm")

    @staticmethod
    def identity_of(args: dict[str, Any]) -> dict[str, Any]:
        """Episode ids hash the checkpoint's content, never its path."""
        ref = args.get("checkpoint", "")
        return {**args, "checkpoint": f"sha:{ckpt.load(ref, 'cpp').digest}"} if ref else args

    def pruner(self, n: int) -> Any:
        from debate.policies.fuseglu import pruner_for  # torch: only once a policy is built

        tag = True if self.author_tag is None else self.author_tag
        policy = pruner_for(self.checkpoint, self.init_seed, self.encoder or "hashed", n, tag)
        if self.encoder and policy.arch.encoder != self.encoder:
            raise ValueError(f"cpp: the checkpoint embeds with '{policy.arch.encoder}', not '{self.encoder}'")
        if self.author_tag is not None and policy.arch.author_tag != self.author_tag:
            raise ValueError(
                f"cpp: the checkpoint reads responses with author_tag {str(policy.arch.author_tag).lower()}; "
                "set author_tag to that or leave it out"
            )
        return policy

    @property
    def truncating(self) -> bool:
        return bool(self.truncate or self.truncate_seats)

    def opening(self, state: DebateState) -> Decision | None:
        return truncation(self, self.pruner(state.n), state, 0)

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        return await decide(self, self.pruner(state.n), state, rng, sample=False)


def truncation(params: CppRouter, policy: Any, state: DebateState, r: int) -> Decision | None:
    """Round 0's decision when its outputs are capped (None otherwise): no edges, the caps."""
    if not params.truncating or (state.rounds is not None and r >= state.rounds):
        return None
    said: Any = params.truncate or params.truncate_seats
    return Decision(Graph(state.n), max_tokens=_caps(params, policy, state.n), record={"truncate": said})


def _caps(params: CppRouter, policy: Any, n: int) -> dict[int, int]:
    quantiles = seat_quantiles(params.truncate_seats) if params.truncate_seats else params.truncate
    caps = policy.arch.caps(quantiles)  # one quantile per seat: checked against the policy's seats
    if len(caps) != n:
        raise ValueError(f"cpp: the checkpoint was made for {len(caps)} seats, the team has {n}")
    return caps


async def decide(
    params: CppRouter, policy: Any, state: DebateState, rng: np.random.Generator, sample: bool
) -> Decision:
    """One round of CPP with `policy` (a `debate.policies.fuseglu.Pruner`): each agent's decisions,
    position by position, all agents together (one encoder batch per position)."""
    from debate.encoders import encoder_for

    n, r = state.n, state.round
    if policy.arch.n_agents != n:
        raise ValueError(f"cpp: the policy was made for {policy.arch.n_agents} seats, the team has {n}")
    encoder = encoder_for(policy.arch.encoder)
    # a network that reads no text (`content` false) zeroes every embedding: none is computed
    embed = encoder.embed if policy.arch.content else _blank(encoder.dim)
    texts = [response_text(v, j, policy.arch.author_tag) for j, v in enumerate(state.latest)]
    responses = await embed(texts)
    kept: list[list[int]] = [[] for _ in range(n)]
    keep = [[[0, False, 0.0] for _ in range(n)] for _ in range(n)]
    queries = np.zeros((n, n, encoder.dim), np.float32)
    conf, answers = state.confidences(), state.answers()
    cues = np.asarray([[cues_of(i, order(i, n)[k], conf, answers) for k in range(n)] for i in range(n)])
    logp = 0.0
    for k in range(n):
        cand = [order(i, n)[k] for i in range(n)]
        queries[:, k] = await embed(
            [query_text(state.question, [texts[j] for j in kept[i]]) for i in range(n)]
        )
        p = policy.probs(np.arange(n), queries[:, k], responses[cand], np.asarray(cand), cues[:, k])
        for i in range(n):
            take = bool(rng.random() < p[i]) if sample else bool(p[i] >= params.threshold)
            logp += math.log(max(1e-12, p[i] if take else 1.0 - p[i]))
            keep[i][k] = [cand[i], take, float(p[i])]
            if take:
                kept[i].append(cand[i])
    edges = [(j, i) for i in range(n) for j in kept[i] if j != i]
    hidden = frozenset(i for i in range(n) if i not in kept[i])
    last = state.rounds is not None and r >= state.rounds
    caps = _caps(params, policy, n) if params.truncating and not last else None
    record = {
        "keep": keep,
        "logp": logp,
        "mode": "sample" if sample else "threshold",
        "policy": policy.digest,
        "kept_edges": sum(len(x) for x in kept),
        "_queries": queries,
        "_cues": cues,  # (n, n, 4): reader i's cues on its k-th candidate (`pruning.cues_of`)
        "_candidates": np.stack([responses[[order(i, n)[k] for k in range(n)]] for i in range(n)]),
    }
    return Decision(Graph(n, edges), max_tokens=caps, record=record, hidden_own=hidden)


def _blank(dim: int) -> Callable[[Sequence[str]], Awaitable[np.ndarray]]:
    """An encoder's `embed` for a network that reads no text: zeros of the encoder's size."""

    async def embed(texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), dim), np.float32)

    return embed


@dataclass(frozen=True)
class CppPolicyRouter:
    """CPP routing with a live policy (the trainer's network between updates), sampling by default."""

    params: CppRouter
    policy: Any
    sample: bool = True

    def opening(self, state: DebateState) -> Decision | None:
        return truncation(self.params, self.policy, state, 0)

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        return await decide(self.params, self.policy, state, rng, self.sample)


@method("random_prune", summary="CPP's control: keep each previous response with chance p")
@dataclass(frozen=True)
class RandomPrune:
    """CPP's Random baseline: every agent keeps each previous-round response — its own included —
    with probability `p`, independently, every round (the paper: p = 0.5)."""

    p: float = 0.5
    LABEL: ClassVar[tuple[str, ...]] = ("p",)

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"random_prune: p must be in [0, 1], got {self.p}")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n = state.n
        keep = [[bool(rng.random() < self.p) for _ in range(n)] for _ in range(n)]  # keep[i][k]: order(i)[k]
        edges = [(order(i, n)[k], i) for i in range(n) for k in range(1, n) if keep[i][k]]
        hidden = frozenset(i for i in range(n) if not keep[i][0])
        record = {"keep": [[[order(i, n)[k], keep[i][k], self.p] for k in range(n)] for i in range(n)]}
        return Decision(Graph(n, edges), record=record, hidden_own=hidden)
