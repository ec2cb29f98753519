"""bench/cpp_credit.py, cpp_dev.py and cpp_rules.py: per-decision effects, the rewards' directions, dev items."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bench/ is not an installed package

from bench.cpp_credit import (  # noqa: E402
    REWARDS,
    Row,
    auc,
    collect,
    effect,
    encoder_probe,
    kind,
    main,
    probe,
    rows_of,
    table,
)
from debate.cpp_reward import index, kept_matrix, order, returns  # noqa: E402


def test_effect_is_kept_minus_pruned_with_its_standard_error() -> None:
    diff, se = effect([True, True, False, False], [1.0, 0.0, 0.0, 0.0])
    assert diff == pytest.approx(0.5)
    assert se == pytest.approx(math.sqrt(0.25 / 2))
    assert all(math.isnan(x) for x in effect([True, True], [1.0, 0.0]))  # nothing pruned: no contrast


def test_kinds_name_round_seat_confidence_and_agreement() -> None:
    assert kind(1, True, 3, True) == "round 1, own, conf <= 3"
    assert kind(2, False, 4, False) == "round 2, peer, conf >= 4, differs"
    assert kind(2, False, 2, True) == "round 2, peer, conf <= 3, agrees"


def test_a_reward_agrees_only_where_it_points_the_way_the_reader_moves() -> None:
    # keeping makes the reader right; a reward whose keep return is higher points the same way
    rows = [
        Row("k", kept, True, kept, (1.0 if kept else 0.0, 0.0 if kept else 1.0))
        for kept in [True, False] * 20
    ]
    lines, clear, agree = table(rows, ["up", "down"])
    assert (clear, agree) == (1, [1, 0])
    assert len(lines) == 3 and lines[2].startswith("| k | 40 | 0.50 |")
    # an effect inside 2 se (0.55 against 0.45 over 20 each) is not clear: nothing counted
    flat = [Row("k", True, True, i < 11, (1.0, 0.0)) for i in range(20)]
    flat += [Row("k", False, True, i < 9, (1.0, 0.0)) for i in range(20)]
    assert table(flat, ["up", "down"])[1:] == (0, [0, 0])


def test_rows_follow_the_episode_its_decisions_and_returns() -> None:
    rows, responses = collect(
        str(ROOT / "examples" / "cpp_calibrated.yaml"), 0.5, 3, [0], "train", {"prompt_style": "rumad"}
    )
    assert len(responses) == 3 * 2 * 3  # items x rounds decided on x agents
    assert all(text.startswith("Answer: ") and 1 <= c <= 5 for text, c, _ in responses)  # no author
    assert len(rows) == 3 * 2 * 3 * 3  # items x debate rounds x agents x candidates
    assert {r.kept for r in rows} == {True, False}
    assert {r.kind.split(",")[1].strip() for r in rows} == {"own", "peer"}


def test_rows_of_reads_each_decision_where_the_reward_indexes_it() -> None:
    import asyncio

    from data.benchmarks.registry import load_benchmark
    from data.grading.graders import grader_for
    from debate.episode import run_episode
    from debate.methods import build_method
    from sweep.config.sweep import load_config
    from sweep.engines.pool import local_agents

    cfg = load_config(str(ROOT / "examples" / "cpp_calibrated.yaml"))
    agents = local_agents(cfg)
    team = [agents[m] for m in cfg.team()]
    sample = load_benchmark("arith", "train", limit=1, seed=0)[0]
    method = build_method("random_prune", {"protocol": "update", "p": 0.5})
    res = asyncio.run(run_episode(method, team, sample, grader_for(sample), 3, cfg.rounds, "arith"))
    rows = rows_of(res, list(REWARDS.values()))
    g = returns(res.trajectory, next(iter(REWARDS.values())))[1]
    n = res.state.n
    for t, rec in enumerate(res.trajectory[1:], start=1):
        kept = kept_matrix(rec)
        for i in range(n):
            for k, j in enumerate(order(i, n)):
                row = rows[index(t, i, k, n)]
                assert row.kept == bool(kept[i, k]) and row.reader == rec.correct_after[i]
                assert row.gains[0] == pytest.approx(float(g[index(t, i, k, n)]))
                assert row.kind.startswith(f"round {t}, {'own' if j == i else 'peer'}")
                assert ("conf <= 3" in row.kind) == (res.state.views[t - 1][j].confidence <= 3)
    assert np.all([r.final == res.correct for r in rows])


def test_auc_counts_ties_half_and_orders_scores() -> None:
    label = np.array([True, True, False, False])
    assert auc(np.array([4.0, 3.0, 2.0, 1.0]), label) == 1.0
    assert auc(np.array([1.0, 2.0, 3.0, 4.0]), label) == 0.0
    assert auc(np.array([1.0, 1.0, 1.0, 1.0]), label) == 0.5
    assert auc(np.array([3.0, 1.0, 2.0, 0.0]), label) == 0.75


def test_the_probe_scores_held_out_folds() -> None:
    rng = np.random.default_rng(0)
    y = rng.random(600) < 0.5
    noise = rng.normal(size=(600, 20))
    signal = np.c_[noise[:, :19], y + rng.normal(scale=0.5, size=600)]
    assert probe(signal, y) > 0.85
    assert abs(probe(noise, y) - 0.5) < 0.08  # 20 noise features: a fit on its own folds would score high
    by_conf, by_text, count = encoder_probe(
        [
            (f"Answer: {i % 7}\nConfidence: {5 if r else 2}\nReasoning: step", 5 if r else 2, r)
            for i, r in enumerate(y[:200])
        ]
    )
    assert (by_conf, count) == (1.0, 200) and by_text > 0.95


def test_the_test_split_is_refused() -> None:
    with pytest.raises(SystemExit) as e:
        main(["--split", "test"])
    assert e.value.code == 2


def test_dev_items_must_come_after_the_training_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.cpp_dev import main as dev_main

    with pytest.raises(SystemExit) as e:
        dev_main(["--name", "x", "--out", str(tmp_path), "--offset", "500"])
    assert e.value.code == 2
    assert "--offset: the training reads train[:1000]" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing trained, nothing written
    with pytest.raises(SystemExit) as e:
        dev_main(["--name", "x", "--out", str(tmp_path), "--adversary", "3"])
    assert e.value.code == 2
    assert "agents.3.adversarial: '3' is not an index of agents; use 0 to 2" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_dev_keep_probabilities_are_told_apart_by_whose_response() -> None:
    import dataclasses

    from bench.cpp_dev import SHARED, evaluate
    from data.benchmarks.registry import load_benchmark
    from debate.methods import build_method
    from sweep.config.sweep import load_config
    from sweep.engines.pool import local_agents

    cfg = load_config(str(ROOT / "examples" / "cpp_calibrated.yaml"))
    agents = local_agents(cfg)
    team = [agents[m] for m in cfg.team()]
    team[1] = dataclasses.replace(team[1], adversarial=True)
    samples = load_benchmark("arith", "train", limit=3, offset=1000, seed=0)
    res, by_kind = evaluate(build_method("cpp", dict(SHARED)), team, samples, [50], cfg.rounds, "arith")
    assert res.shape == (3, 3)
    decided = 3 * cfg.rounds  # items x debate rounds: each reader decides once on each response
    assert len(by_kind["author: adversary, own"]) == decided
    assert len(by_kind["author: adversary, peer"]) == 2 * decided  # the two honest readers on it
    assert len(by_kind["author: honest, own"]) == 2 * decided
    assert len(by_kind["author: honest, peer"]) == 4 * decided


def test_the_rule_grid_marks_its_pareto_front(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cpp_rules import main as rules_main
    from bench.cpp_rules import pareto

    assert pareto([(0.6, 1.0), (0.7, 0.8), (0.5, 0.5), (0.7, 0.9)]) == [False, True, True, False]
    rules_main(["--hide", "2", "--keep", "4", "6", "--items", "4", "--seeds", "0"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    labels = {line.split(" | ")[0][2:] for line in lines[2:]}
    assert labels == {"Full-Debate", "4/2", "4/2, skip agreeing", "6/2", "6/2, skip agreeing"}
    assert any(line.endswith("| yes |") for line in lines)  # the cheapest row is always on the front
    rules_main(["--hide", "2", "--keep", "4", "--items", "4", "--seeds", "0", "--adversary", "1"])
    printed = capsys.readouterr().out
    lines = [line for line in printed.splitlines() if line.startswith("| ")]
    labels = {line.split(" | ")[0][2:] for line in lines[2:]}
    assert labels == {
        "Full-Debate",
        "never keep the adversary",
        "4/2, told the seat",
        "4/2, skip agreeing, told the seat",
    }
    assert printed.splitlines()[0].endswith("; seat 1 adversarial")
    with pytest.raises(SystemExit):
        rules_main(["--items", "4", "--adversary", "7"])


def test_the_rule_search_flips_only_its_cells_and_counts_the_visits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.cpp_rule_search import FlippedRule
    from bench.cpp_rule_search import main as search_main

    conf, answers = (2, 4, 4), ("a", "b", "c")
    rule = FlippedRule(keep_at=3, hide_own_at=3, skip_agreeing=True)
    assert rule.keeps(0, 1, conf, answers) and rule.keeps(0, 2, conf, answers)  # confident, differing
    assert not rule.keeps(0, 0, conf, answers)  # unsure own response
    assert rule.visits[(-1, 0, 0, 2, 4)] == 2 and rule.visits[(1, 0, 0, 2, 4)] == 1
    any_seat = FlippedRule(keep_at=3, hide_own_at=3, skip_agreeing=True, flips=frozenset([(-1, 0, 0, 2, 4)]))
    assert not any_seat.keeps(0, 1, conf, answers) and not any_seat.keeps(0, 2, conf, answers)
    seat_1 = FlippedRule(keep_at=3, hide_own_at=3, skip_agreeing=True, flips=frozenset([(1, 0, 0, 2, 4)]))
    assert not seat_1.keeps(0, 1, conf, answers) and seat_1.keeps(0, 2, conf, answers)
    assert seat_1.keeps(0, 0, (2, 4, 4), ("b", "b", "c")) is False  # other cells as the rule decides
    search_main(["--items", "3", "--seeds", "0", "--check-seeds", "1", "--min-visits", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("from confidence_keep 3/3 skip: ")
    labels = [line.split(" | ")[0][2:] for line in lines if line.startswith("| ")][-3:]
    assert labels[:2] == ["Full-Debate", "confidence_keep 3/3 skip"] and labels[2].startswith("the table: ")
