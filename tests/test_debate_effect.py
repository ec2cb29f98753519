"""What debate did (`sweep.run.debate_effect`), the lines `sweep run` ends with: the vote per round and
the agents' answers debate changed (W2R/R2W) between round 0 and the end, checked against a plain
recomputation from the stored Parquet rows of a simulated sweep; an agent's unparsed or critique
replies do not replace its answer; methods without rounds get no lines; and the `sweep view` line
names an episode where an answer changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from data import grade
from sweep.cli import main
from sweep.config.sweep import load_config
from sweep.run.debate_effect import agent_answers, debate_effects, effect_lines
from sweep.run.plan import build_plan
from sweep.store.results import ResultStore

CLIQUE = "fixed(topology=clique)"


def _config(tmp_path: Path, methods: list[Any], **extra: Any) -> Path:
    cfg = {
        "name": "effect",
        "output_dir": str(tmp_path / "out"),
        "models": {"mid": {"engine": "simulated", "args": {"skill": 0.5, "malformed_rate": 0.1}}},
        "agents": [{"model": "mid", "count": 3}],
        "datasets": [{"name": "arith", "limit": 12}],
        "methods": methods,
        "rounds": 2,
        "seeds": [0],
        "tracking": {"enabled": False},
        **extra,
    }
    path = tmp_path / "effect.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """A simulated cot + clique sweep (3 agents, 2 rounds, 12 items), run in-process."""
    from sweep.run.runner import run_sweep

    tmp = tmp_path_factory.mktemp("effect")
    cfg = load_config(_config(tmp, ["cot", {"name": "fixed", "args": {"topology": "clique"}}]))
    out = run_sweep(cfg)
    assert out.stats is not None and out.stats.done == 24 and not out.stats.failures
    return build_plan(cfg), out.out_dir


def _by_hand(out: Path) -> tuple[list[float], int, int, int]:
    """The clique's vote per round and its (W2R, R2W, agents), recomputed with plain loops."""
    store = ResultStore(out)
    ep = {r["episode_id"]: r for r in store.episodes().filter(pl.col("rounds") > 0).to_dicts()}
    votes = [sum(r["round_correct"][i] for r in ep.values()) / len(ep) for i in range(3)]
    answers: dict[tuple[str, int], list[tuple[int, int, str]]] = {}
    for t in store.turns().to_dicts():
        if t["episode_id"] in ep:
            answers.setdefault((t["episode_id"], t["agent"]), [])
            if t["parsed"] and t["answer"] is not None and t["phase"] != "critique":
                order = 0 if t["phase"] == "initial" else 2
                answers[(t["episode_id"], t["agent"])].append((t["round"], order, t["answer"]))
    w2r = r2w = 0
    for (eid, _), said in answers.items():
        said.sort()
        gold = ep[eid]["gold"]
        first = next((a for r, _, a in said if r == 0), None)
        last = said[-1][2] if said else None

        def ok(answer: str | None, gold: str = gold) -> bool:
            return answer is not None and grade("arith", answer, gold) == "correct"

        w2r += not ok(first) and ok(last)
        r2w += ok(first) and not ok(last)
    return votes, w2r, r2w, len(answers)


def test_effects_match_a_recomputation_from_the_stored_rows(swept: tuple[Any, Path]) -> None:
    plan, out = swept
    (effect,) = debate_effects(plan, out)  # cot has no rounds: no effect of its own
    assert (effect.method, effect.dataset, effect.episodes) == (CLIQUE, "arith/test", 12)
    votes, w2r, r2w, agents = _by_hand(out)
    assert effect.vote_accuracy == pytest.approx(votes)
    assert (effect.w2r, effect.r2w, effect.agents) == (w2r, r2w, agents) == (effect.w2r, effect.r2w, 36)
    assert effect.w2r + effect.r2w > 0  # skill-0.5 agents that read each other change answers


def test_the_example_episode_is_one_where_debate_changed_an_answer(swept: tuple[Any, Path]) -> None:
    plan, out = swept
    (effect,) = debate_effects(plan, out)
    assert effect.example is not None
    store = ResultStore(out)
    row = store.episodes().filter(pl.col("episode_id") == effect.example).row(0, named=True)
    assert row["method_label"] == CLIQUE
    if effect.example_why == "the vote went wrong → right":
        assert not row["round_correct"][0] and row["correct"]
    else:
        turns = store.turns().filter(pl.col("episode_id") == effect.example)
        flips = agent_answers(turns, store.episodes().filter(pl.col("episode_id") == effect.example))
        assert (flips["first_ok"] != flips["last_ok"]).any()
    lines = effect_lines([effect], out, ".venv/bin/sweep")
    assert lines[0].startswith("what debate did")
    assert f"vote, rounds 0 → 2: {' → '.join(f'{a:.3f}' for a in effect.vote_accuracy)}" in lines[1]
    assert f"{effect.w2r} wrong → right (W2R), {effect.r2w} right → wrong (R2W), of 36" in lines[2]
    assert lines[-1].endswith(f".venv/bin/sweep view {out} --episode {effect.example}")


def test_only_this_plans_episodes_count(swept: tuple[Any, Path], tmp_path: Path) -> None:
    plan, out = swept
    cfg = load_config(_config(tmp_path, [{"name": "fixed", "args": {"topology": "clique"}}]), [], str(out))
    smaller = build_plan(
        cfg.model_copy(update={"datasets": [cfg.datasets[0].model_copy(update={"limit": 4})]})
    )
    (effect,) = debate_effects(smaller, out)
    assert (effect.episodes, effect.agents) == (4, 12)


def _turn(agent: int, rnd: int, phase: str, answer: str | None, parsed: bool = True) -> dict[str, Any]:
    return {
        "episode_id": "e",
        "agent": agent,
        "round": rnd,
        "phase": phase,
        "answer": answer,
        "parsed": parsed,
    }


def test_unparsed_and_critique_replies_keep_the_agents_last_answer() -> None:
    turns = pl.DataFrame(
        [
            _turn(0, 0, "initial", "3"),
            _turn(0, 1, "update", "7"),
            _turn(0, 2, "update", "9", parsed=False),
            _turn(1, 0, "initial", "7"),
            _turn(1, 2, "critique", "7"),
            _turn(1, 1, "revise", "3"),
            _turn(2, 0, "initial", None, parsed=False),
            _turn(2, 1, "update", "7"),
        ]
    )
    episodes = pl.DataFrame({"episode_id": ["e"], "dataset": ["arith"], "gold": ["7"]})
    got = agent_answers(turns, episodes).sort("agent")
    assert got["first"].to_list() == ["3", "7", None]
    assert got["last"].to_list() == ["7", "3", "7"]  # agent 0's unparsed round 2 keeps its "7"
    assert got["first_ok"].to_list() == [False, True, False]  # no answer at round 0 counts as wrong
    assert got["last_ok"].to_list() == [True, False, True]


def test_no_lines_without_a_debate_method(tmp_path: Path) -> None:
    from sweep.run.runner import run_sweep

    cfg = load_config(_config(tmp_path, ["cot", {"name": "cot_sc", "args": {"m": 3}}]))
    run_sweep(cfg)
    assert debate_effects(build_plan(cfg), Path(cfg.output_dir)) == []
    assert effect_lines([], Path(cfg.output_dir)) == []


def test_sweep_run_ends_with_what_debate_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, ["cot", {"name": "fixed", "args": {"topology": "ring"}}], rounds=1)
    assert main(["run", str(config), "--limit", "5"]) == 0
    out = capsys.readouterr().out
    table, effect = out.index("results"), out.index("what debate did")
    assert table < effect and out.count("answers changed by debate") == 1  # cot gets no line
    assert "fixed(topology=ring) on arith/test (5 episodes): vote, rounds 0 → 1: " in out
    assert f"view {tmp_path / 'out'}" in out
