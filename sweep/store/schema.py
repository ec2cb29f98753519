"""The Parquet schemas of the results contract and the converters into their rows.

- `episodes/`: one row per episode; the debate-diagnostic summary columns (`DIAGNOSTIC_FIELDS`, see
  `debate.diagnostics` for the formulas) are nullable: null where a rate has no denominator, and in
  parts written before they existed.
- `turns/`: one row per model call; `verdicts` lines up with `sources` on `revise` turns (the critic's
  critique was ACCEPTed, REJECTed, or null: unreadable) and is empty on every other turn.
- `rounds/`: one row per (episode, round), round 0 included: the per-round diagnostics and the
  router's decision (who spoke, the graph, edge weights, output caps, a learned policy's record).
Columns added after the first release are nullable: null in parts written before they existed.
The converters into rows are in `sweep.store.records`.
"""

from __future__ import annotations

import pyarrow as pa


def _f(name: str, type_: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


DIAGNOSTIC_FIELDS = [
    _f("w2r", pa.float64(), True),  # wrong-to-right rate, pooled over rounds 1..R
    _f("r2w", pa.float64(), True),  # right-to-wrong rate
    _f("net", pa.float64(), True),  # w2r - r2w
    _f("w2r_count", pa.int32(), True),
    _f("r2w_count", pa.int32(), True),
    _f("changed", pa.int32(), True),  # answer changes, summed over agents and rounds
    _f("cross_ans", pa.float64(), True),  # share of routed edges whose ends disagreed
    _f("src_conf", pa.float64(), True),  # mean routed source confidence, (c - 1) / 4
    _f("critiques", pa.int32(), True),  # critiques delivered (critique_revise only)
    _f("verdicts", pa.int32(), True),  # readable ACCEPT/REJECT verdicts
    _f("accepted", pa.int32(), True),
    _f("acceptance", pa.float64(), True),  # accepted / verdicts
    _f("influence_entropy", pa.float64(), True),  # after the last round
    _f("answer_entropy", pa.float64(), True),  # bits, after the last round
    _f("agreement", pa.float64(), True),  # plurality share after the last round
]

EPISODE_SCHEMA = pa.schema(
    [
        _f("episode_id", pa.string()),
        _f("sweep_id", pa.string()),
        _f("method", pa.string()),
        _f("method_spec", pa.string()),  # JSON of the method's full spec
        _f("method_label", pa.string(), True),  # readable: the name and the arguments that define it
        _f("dataset", pa.string()),
        _f("split", pa.string()),
        _f("item_id", pa.string()),
        _f("seed", pa.int64()),
        _f("n_agents", pa.int32()),
        _f("rounds", pa.int32()),
        _f("models", pa.list_(pa.string())),
        _f("final_answer", pa.string(), nullable=True),
        _f("gold", pa.string()),
        _f("correct", pa.bool_()),
        _f("round_correct", pa.list_(pa.bool_())),  # one per round, round 0 included
        _f("round_answers", pa.list_(pa.string())),  # the vote after each round; items may be null
        _f("calls", pa.int32()),
        _f("prompt_tokens", pa.int64()),
        _f("completion_tokens", pa.int64()),
        _f("cached_tokens", pa.int64()),
        _f("cache_hits", pa.int32()),  # calls served by the LLM-call cache
        _f("cost", pa.float64()),  # price-weighted; 0 where no prices are known
        _f("parse_failures", pa.int32()),
        # of those, replies whose answer hedged between several (`data.grading.outcome.AMBIGUOUS`); null in older parts
        _f("ambiguous", pa.int32(), True),
        _f("simulated", pa.bool_()),
        _f("latency_s", pa.float64()),
        _f("finished_at", pa.timestamp("us", tz="UTC")),
        *DIAGNOSTIC_FIELDS,
    ]
)

TURN_SCHEMA = pa.schema(
    [
        _f("episode_id", pa.string()),
        _f("round", pa.int32()),
        _f("agent", pa.int32()),
        _f("phase", pa.string()),
        _f("model", pa.string()),
        _f("text", pa.string()),
        _f("answer", pa.string(), nullable=True),
        _f("confidence", pa.int32(), nullable=True),
        _f("reasoning", pa.string()),
        _f("parsed", pa.bool_()),
        _f("prompt_tokens", pa.int64()),
        _f("completion_tokens", pa.int64()),
        _f("cached_tokens", pa.int64()),
        _f("latency_s", pa.float64()),
        _f("seed", pa.int64(), nullable=True),
        _f("cache_hit", pa.bool_()),
        _f("sources", pa.list_(pa.int32())),
        _f("verdicts", pa.list_(pa.string()), nullable=True),  # null only in parts older than the column
        _f("cost", pa.float64(), True),  # price-weighted cost of the call
    ]
)

ROUND_SCHEMA = pa.schema(
    [
        _f("episode_id", pa.string()),
        _f("round", pa.int32()),
        _f("agents", pa.int32()),
        _f("correct", pa.int32()),  # agents right at the end of the round
        _f("changed", pa.int32(), True),
        _f("w2r_count", pa.int32(), True),
        _f("wrong_before", pa.int32(), True),
        _f("r2w_count", pa.int32(), True),
        _f("right_before", pa.int32(), True),
        _f("w2r", pa.float64(), True),
        _f("r2w", pa.float64(), True),
        _f("net", pa.float64(), True),
        _f("edges", pa.int32()),
        _f("cross_edges", pa.int32()),
        _f("cross_ans", pa.float64(), True),
        _f("src_conf", pa.float64(), True),
        _f("critiques", pa.int32()),
        _f("verdicts", pa.int32()),
        _f("accepted", pa.int32()),
        _f("acceptance", pa.float64(), True),
        _f("influence_entropy", pa.float64(), True),
        _f("answer_entropy", pa.float64()),
        _f("agreement", pa.float64()),
        _f("calls", pa.int32()),
        _f("tokens", pa.int64()),  # prompt + completion tokens of the round's calls
        _f("cost", pa.float64(), True),  # price-weighted cost of the round's calls
        _f("active", pa.list_(pa.int32()), True),  # agents that spoke (made calls) this round
        # The router's decision (null in round 0): s -> t means t saw s.
        _f("edge_src", pa.list_(pa.int32()), True),
        _f("edge_tgt", pa.list_(pa.int32()), True),
        _f("edge_weight", pa.list_(pa.float64()), True),  # per edge; null: the router gave no weights
        _f("max_tokens", pa.list_(pa.int32()), True),  # per agent output cap; null: no caps
        _f("decision", pa.string(), True),  # JSON record of a learned policy (or PEAR's scores)
    ]
)
