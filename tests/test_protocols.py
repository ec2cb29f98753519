"""Pre-registered protocols (bench/protocol.py, bench/protocol_bench.py, bench/protocols/README.md): a
valid file loads; every refusal is one line naming the field; the ledger records the file's sha256 with
the first results and refuses a changed file after; the declared targets are measured with the exact
McNemar test; and one tiny bench run end to end under a protocol (slow: it trains)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bench/ is not an installed package

from actors.populations import load as load_population  # noqa: E402
from bench.protocol import load_protocol, protocol_hash  # noqa: E402
from bench.protocol_bench import check_items, check_rows, check_setup, from_flags, header, report  # noqa: E402
from bench.protocol_results import LEDGER, claim, exact_mcnemar, targets_table  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from debate.spec import stable_hash  # noqa: E402
from sweep.config.errors import ConfigError  # noqa: E402
from sweep.train.config import load_train  # noqa: E402

EXAMPLE = ROOT / "tests" / "data" / "protocol_example.yaml"
TRAINED = "RUMAD trained (best eval), B = 12"


def raw_example() -> dict[str, Any]:
    """The example with its population's current digest (a recalibrated population breaks no test)."""
    raw = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    raw["population_digest"] = load_population(raw["population"]).digest
    return raw


def write(tmp_path: Path, edit: Callable[[dict[str, Any]], Any] = lambda r: None, name: str = "protocol_example") -> Path:  # fmt: skip
    raw = raw_example()
    edit(raw)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def refusal(call: Callable[[], Any]) -> str:
    with pytest.raises(ConfigError) as e:
        call()
    line = str(e.value)
    assert "\n" not in line
    return line


def test_the_example_loads(tmp_path: Path) -> None:
    p = load_protocol(write(tmp_path))
    assert (p.name, p.learner, p.population, p.train_seeds, p.test_seeds) == (
        "protocol_example", "rumad", "rumad", [0], [1000],
    )  # fmt: skip
    config, sets, base = p.training(7)
    assert config == ROOT / "examples" / "train_rumad_simulated.yaml"
    assert sets[0] == "ppo.seed=7" and "ppo.updates=1" in sets and base == ["datasets.0.limit=16"]
    assert [b[0] for b in p.baseline_rows()] == ["oracle", "least_confident", "silent"]
    assert [t.test for t in p.targets] == ["none", "none", "mcnemar"]


def test_the_shipped_example_is_the_test_one() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    assert raw["name"] == EXAMPLE.stem and re.fullmatch(r"[0-9a-f]{16}", raw["population_digest"])


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(raw: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node = raw
        for key in head:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value

    return edit


@pytest.mark.parametrize(
    "edit, start, fragment",
    [
        (_set("targts", []), "targts: unknown protocol key", "(did you mean 'targets'?)"),
        (_set("train.sett", []), "train.sett: unknown protocol key", "(did you mean 'set'?)"),
        (_set("targets.0.metrc", "accuracy"), "targets[0].metrc: unknown", "(did you mean 'metric'?)"),
        (_set("test_seeds", [0]), "test_seeds: 0 is in train_seeds too", "test seeds never seen in training"),
        (_set("test_seeds", [5, 6]), "test_seeds: 2 for 1 train_seeds", "one test seed per training"),
        (_set("train_seeds", [3, 3]), "train_seeds: seed 3 appears twice", "list each seed once"),
        (
            _set("population_digest", "0" * 16),
            "population_digest: population 'rumad' now has digest",
            "copy ",
        ),  # fmt: skip
        (
            _set("population", "rumadd"),
            "population: no packaged population 'rumadd' (did you mean 'rumad'?)",
            "packaged: cpp",
        ),
        (_set("population", "v2"), "population: no packaged population 'v2'", "; or v1 (the engine's own"),
        (_set("population", "populations/rumad.yaml"), "population: give a packaged", "name"),
        (
            _set("reward.alpha_sparsty", 0.1),
            "reward.alpha_sparsty: unknown coefficient of rumad",
            "(did you mean 'alpha_sparsity'?)",
        ),  # fmt: skip
        (lambda r: r["reward"].pop("token_scale"), "reward.token_scale: missing", "every coefficient"),
        (_set("learner", "pear"), "learner: Input should be 'rumad' or 'cpp'", "; give one of these"),
        (_set("name", "other"), "name: 'other' is not the file's name", "after its file"),
        (_set("test.split", "rumad:dev"), "test.split: 'rumad:dev' is the training's too", "held-out"),
        (_set("train.set", ["ppo.seed=3"]), "train.set[0]: 'ppo.seed=3' is the bench's", "remove it"),
        (_set("train.adv_set", ["ppo.updates=2"]), "train.adv_set: only the cpp bench", "train.set"),
        (_set("adv_reward", {"alpha_accuracy": 2.0}), "adv_reward: only the cpp bench", "to reward"),
        (
            _set("baselines.0.method", "oracel"),
            "baselines[0]: unknown method 'oracel'",
            "(did you mean 'oracle'?)",
        ),
        (_set("baselines.1.label", "oracle"), "baselines[1].label: 'oracle' names two baselines", "rename"),
        (_set("baselines.0.args", {"budgt": 3}), "baselines[0]: method 'oracle' has no argument 'budgt'", ""),
        (_set("targets.0.metric", "tokens"), "", ""),  # valid: a tokens target without a test
        (_set("targets.2.metric", "tokens"), "targets[2].test: McNemar tests paired accuracy", "test: none"),
        (_set("targets.0.against", TRAINED), "targets[0].against: the same row as compare", "another row"),
        (_set("targets", []), "targets: List should have at least 1 item", "add at least one"),
        (_set("test.items", True), "test.items: Input should be a valid integer", "whole number"),
        (_set("reward.alpha_accuracy", True), "reward.alpha_accuracy: ", "a number"),
        (_set("targets.0.margin", float("nan")), "targets[0].margin: ", "finite"),
        (
            _set("method_args", {"reasoning_charz": 0}),
            "method_args.reasoning_charz: not an argument every method takes",
            "(did you mean 'reasoning_chars'?)",
        ),
        (
            _set("method_args", {"reasoning_chars": -1}),
            "method_args: method 'vote': reasoning_chars must be >= 0",
            "",
        ),
        (_set("method_args", {"reasoning_chars": 0}), "", ""),  # valid
    ],
)
def test_each_refusal_is_one_line_naming_the_field(
    tmp_path: Path, edit: Callable[[dict[str, Any]], Any], start: str, fragment: str
) -> None:
    path = write(tmp_path, edit)
    if not start:
        load_protocol(path)
        return
    line = refusal(lambda: load_protocol(path))
    assert line.startswith(start) and fragment in line, line


def test_a_changed_population_names_the_next_version(tmp_path: Path) -> None:
    line = refusal(lambda: load_protocol(write(tmp_path, _set("population_digest", "0" * 16))))
    assert "a population change is a new protocol" in line
    assert line.endswith("bench/protocols/protocol_example-v2.yaml with the new digest")


def rumad_setup(p: Any, seed: int = 0) -> Any:
    config, sets, base = p.training(seed)
    return load_train(config, sets, base, None)


@pytest.mark.parametrize(
    "edit, start",
    [
        (_set("reward.alpha_sparsity", 0.0), "reward.alpha_sparsity: the protocol declares 0.0 but"),
        (_set("train.limit", 8), "train.limit: the protocol declares 8 but"),
        (_set("train.split", "rumad:val"), "train.split: the protocol declares 'rumad:val' but"),
        (
            _set("train.base_set", ["datasets.0.limit=16", "rounds=3"]),
            "train: examples/train_rumad_simulated.yaml",
        ),
        (
            _set("method_args", {"reasoning_chars": 0}),
            "method_args.reasoning_chars: the protocol gives every method 0 but",
        ),
    ],
)
def test_the_training_must_resolve_to_what_the_protocol_declares(
    tmp_path: Path, edit: Callable[[dict[str, Any]], Any], start: str
) -> None:
    p = load_protocol(write(tmp_path, edit))
    line = refusal(lambda: check_setup(p, rumad_setup(p), rounds=6))
    assert line.startswith(start), line


def test_the_example_resolves_cleanly_and_names_its_population(tmp_path: Path) -> None:
    p = load_protocol(write(tmp_path))
    setup = rumad_setup(p)
    check_setup(p, setup, rounds=6, updates=1)
    line = refusal(lambda: check_setup(p, setup, rounds=6, updates=150))
    assert line.startswith("--updates: 150 contradicts protocol protocol_example (1,")
    other = p.model_copy(update={"population": "rumad-v2"})
    line = refusal(lambda: check_setup(other, setup, rounds=6))
    assert line.startswith("population: seat model 'sim-strong' of") and "not 'rumad-v2'" in line


def test_method_args_reach_every_baseline_and_must_be_what_the_training_runs(tmp_path: Path) -> None:
    def full(raw: dict[str, Any]) -> None:
        raw["method_args"] = {"reasoning_chars": 0}
        raw["train"]["set"] = [*raw["train"]["set"], "method.args.reasoning_chars=0"]

    p = load_protocol(write(tmp_path, full))
    assert all(args["reasoning_chars"] == 0 for _, _, args in p.baseline_rows())
    assert p.args({"reasoning_chars": 300, "k": 2}) == {"reasoning_chars": 300, "k": 2}
    setup = rumad_setup(p)
    assert setup.method.reasoning_chars == 0
    check_setup(p, setup, rounds=6)


def _v1(raw: dict[str, Any]) -> None:
    """The example on population v1: no digest, a base sweep of v1 agents."""
    raw["population"] = "v1"
    del raw["population_digest"]
    raw["train"]["set"] = [*raw["train"]["set"], "sweep=rumad_simulated.yaml"]


def test_population_v1_takes_no_digest_and_needs_v1_seats(tmp_path: Path) -> None:
    p = load_protocol(write(tmp_path, _v1))
    assert (p.population, p.population_digest) == ("v1", None)
    setup = rumad_setup(p)
    assert {setup.base.models[m].args.get("population") for m in setup.base.team()} == {None}
    check_setup(p, setup, rounds=6, updates=1)
    # the calibrated team under a v1 protocol, and the v1 team under a calibrated one: refused
    (tmp_path / "c").mkdir()
    own = load_protocol(write(tmp_path / "c"))
    line = refusal(lambda: check_setup(p, rumad_setup(own), rounds=6))
    assert line.startswith("population: seat model 'sim-strong' of") and "not v1" in line, line
    line = refusal(lambda: check_setup(own, setup, rounds=6))
    assert line.startswith("population: seat model 'sim-1' of") and "not 'rumad'" in line, line
    record = claim(tmp_path / "results", tmp_path / "protocol_example.yaml")
    assert (record["population"], record["population_digest"]) == ("v1", None)


@pytest.mark.parametrize(
    "edit, start",
    [
        (lambda r: (_v1(r), r.update(population_digest="0" * 16)), "population_digest: v1 is the engine's"),
        (lambda r: r.pop("population_digest"), "population_digest: missing; declare population 'rumad'"),
    ],
)
def test_a_digest_goes_with_a_file_and_only_with_one(
    tmp_path: Path, edit: Callable[[dict[str, Any]], Any], start: str
) -> None:
    line = refusal(lambda: load_protocol(write(tmp_path, edit)))
    assert line.startswith(start), line


def test_the_ledger_claims_once_and_refuses_a_changed_file(tmp_path: Path) -> None:
    path, out = write(tmp_path), tmp_path / "results"
    record = claim(out, path, {"training": "a"})
    stored = json.loads((out / LEDGER).read_text(encoding="utf-8"))
    assert stored == record
    assert stored["sha256"] == protocol_hash(path) and len(stored["sha256"]) == 64
    assert (stored["name"], stored["population"]) == ("protocol_example", "rumad")
    assert stored["population_digest"] == load_population("rumad").digest and stored["claimed_at"]
    assert sorted(p.name for p in out.iterdir()) == [LEDGER]  # no temporary file left
    assert claim(out, path, {"training": "a"}) == record  # the same file: passes, nothing rewritten
    assert claim(out, path) == record
    line = refusal(lambda: claim(out, path, {"training": "b"}))
    assert (
        line.startswith("protocol ") and "its training changed after its results were first written" in line
    )
    path.write_text(path.read_text(encoding="utf-8") + "# a comment is a change too\n", encoding="utf-8")
    line = refusal(lambda: claim(out, path))
    assert line == (
        f"protocol {path} changed after its results were first written in {out}; a protocol change is a "
        "new file: copy it to bench/protocols/protocol_example-v2.yaml"
    )
    assert json.loads((out / LEDGER).read_text(encoding="utf-8")) == record  # the ledger is untouched


def test_the_ledger_refuses_another_protocol_and_unclaimed_results(tmp_path: Path) -> None:
    out = tmp_path / "results"
    claim(out, write(tmp_path))
    other = write(tmp_path, _set("name", "second"), "second")
    line = refusal(lambda: claim(out, other))
    assert line.startswith(f"--out: {out} holds results of protocol protocol_example")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "seed-0").mkdir()
    line = refusal(lambda: claim(tmp_path / "old", other))
    assert line.startswith(f"--out: {tmp_path / 'old'} holds results written without a protocol")
    (out / LEDGER).write_text("{not json", encoding="utf-8")
    assert refusal(lambda: claim(out, write(tmp_path))).startswith(f"{out / LEDGER}: unreadable")


def flags(**given: Any) -> argparse.Namespace:
    base: dict[str, Any] = {"protocol": None, "seeds": None, "updates": None, "items": None, "sets": []}
    return argparse.Namespace(**(base | given))


def test_flags_take_their_defaults_without_a_protocol_and_the_protocol_s_values_with_it(
    tmp_path: Path,
) -> None:
    args = flags(seeds=2)
    assert from_flags(args, "rumad", "mmlu", seeds=5, updates=150, items=300) is None
    assert (args.seeds, args.updates, args.items) == (2, 150, 300)
    path = write(tmp_path)
    args = flags(protocol=str(path), items=5)
    assert from_flags(args, "rumad", "mmlu", seeds=5, updates=150, items=300) is not None
    assert (args.seeds, args.updates, args.items) == (1, None, 5)  # updates: the training's own


@pytest.mark.parametrize(
    "given, learner, dataset, start",
    [
        ({"seeds": 3}, "rumad", "mmlu", "--seeds: 3 contradicts protocol protocol_example (1)"),
        ({"items": 300}, "rumad", "mmlu", "--items: 300 contradicts protocol protocol_example (5)"),
        ({"sets": ["reward.k=0"]}, "rumad", "mmlu", "--set: the protocol's train.set"),
        ({}, "cpp", "arith", "learner: "),
        ({}, "rumad", "arith", "test.dataset: this bench evaluates on arith, not 'mmlu'"),
    ],
)
def test_a_flag_that_contradicts_the_protocol_is_refused(
    tmp_path: Path, given: dict[str, Any], learner: str, dataset: str, start: str
) -> None:
    args = flags(protocol=str(write(tmp_path)), **given)
    line = refusal(lambda: from_flags(args, learner, dataset, seeds=5, updates=150, items=300))
    assert line.startswith(start), line


def test_a_test_offset_is_shown_and_a_split_too_short_for_it_is_refused(tmp_path: Path) -> None:
    p = load_protocol(write(tmp_path))
    assert f"[:{p.test.items}] (shuffle seed" in header(write(tmp_path), p)  # no offset: as before
    path = write(tmp_path, lambda r: r["test"].update(offset=200, items=3))
    p = load_protocol(path)
    assert "evaluated on mmlu rumad:test[200:203] (shuffle seed 0)" in header(path, p)
    check_items(p, [object()] * 3)
    line = refusal(lambda: check_items(p, [object()] * 2))
    assert line.startswith("test.items: mmlu rumad:test has 2 items past offset 200, not 3;"), line


def test_targets_must_name_rows_the_bench_runs(tmp_path: Path) -> None:
    p = load_protocol(write(tmp_path))
    rows = [TRAINED, "clique (MAD)", "oracle", "least_confident", "silent"]
    check_rows(p, rows, ("accuracy", "tokens"))
    line = refusal(
        lambda: check_rows(p, [r.replace("(best eval)", "(best)") for r in rows], ("accuracy", "tokens"))
    )
    assert line.startswith(f"targets[0].compare: '{TRAINED}' is not a row of this bench (did you mean")
    assert refusal(lambda: check_rows(p, [*rows, "silent"], ("accuracy",))).startswith(
        "baselines: 'silent' is a row this bench runs already"
    )
    assert refusal(lambda: check_rows(p, rows, ("accuracy", "cost"))).startswith(
        "targets[1].metric: this bench measures accuracy, cost, not tokens"
    )


@dataclasses.dataclass
class Tally:
    by_item: dict[str, bool]
    tokens: int

    @property
    def accuracy(self) -> float:
        return sum(self.by_item.values()) / len(self.by_item)


def tally(right: list[bool], tokens: int) -> Tally:
    return Tally({f"i{k}": r for k, r in enumerate(right)}, tokens)


@pytest.mark.parametrize("wins, losses, ties", [(0, 0, 5), (7, 1, 12), (3, 9, 0), (20, 5, 5), (1, 0, 0)])
def test_exact_mcnemar_is_the_two_sided_binomial_test(wins: int, losses: int, ties: int) -> None:
    from scipy.stats import binomtest

    a = tally([True] * wins + [False] * losses + [True] * ties, 0)
    b = tally([False] * wins + [True] * losses + [True] * ties, 0)
    got = exact_mcnemar([a], [b])
    assert got[:3] == (wins, losses, wins + losses + ties)
    want = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    assert got[3] == pytest.approx(want, rel=1e-12)


def test_the_targets_are_measured_and_judged(tmp_path: Path) -> None:
    p = load_protocol(write(tmp_path))
    n = 30
    rows = {
        TRAINED: [tally([k < 20 for k in range(n)], 70 * n)],  # 0.667, 70 tokens/task
        "least_confident": [tally([k < 21 for k in range(n)], 50 * n)],  # 0.700: target 0 fails
        "clique (MAD)": [tally([k < 19 for k in range(n)], 100 * n)],  # 70 vs 100: -30.0 % <= -30 %: passes
        "oracle": [tally([k < 25 for k in range(n)], 0)],
        "silent": [tally([k < 10 for k in range(n)], 0)],  # 15 wins, 0 losses: p = 6.1e-05 < 0.05
    }
    table, passed = targets_table(p, rows)
    lines = table.splitlines()[2:]
    assert passed == 2 and len(lines) == 3
    assert "| FAIL |" in lines[0] and "0.667 vs 0.700 (-0.033)" in lines[0]
    assert "| pass |" in lines[1] and "(-30.0%)" in lines[1]
    assert "| pass | 6.1e-05 |" in lines[2] and "McNemar p < 0.05" in lines[2]
    rows["clique (MAD)"] = [tally([True] * n, 99 * n)]  # 70 / 99 - 1 = -29.3 %: fails
    rows["silent"] = [tally([k < 24 for k in range(n)], 0)]  # 1 win: p = 1, the direction alone is not enough
    assert targets_table(p, rows)[1] == 0


def test_the_report_checks_the_file_again(tmp_path: Path) -> None:
    path, out = write(tmp_path), tmp_path / "results"
    p = load_protocol(path)
    claim(out, path)
    rows = {label: [tally([True, False], 10)] for label in (TRAINED, "least_confident", "clique (MAD)", "oracle", "silent")}  # fmt: skip
    assert report(path, p, out, rows).endswith("targets pass")
    path.write_text(path.read_text(encoding="utf-8").replace("items: 5", "items: 6"), encoding="utf-8")
    assert "changed after its results were first written" in refusal(lambda: report(path, p, out, rows))


def _bench(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))  # spawned trainers import the bench module by its name
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def test_a_bench_refuses_a_contradicting_flag_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench("rumad_vs_clique")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        bench.main(["--protocol", str(write(tmp_path)), "--out", str(out), "--seeds", "2"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert (
        err
        == "error: --seeds: 2 contradicts protocol protocol_example (1); drop the flag or write a new protocol\n"
    )
    assert not out.exists()


def test_the_shipped_rumad_gated_protocol_loads_and_resolves(tmp_path: Path) -> None:
    from bench.protocol_bench import check_setup as check

    p = load_protocol(ROOT / "bench" / "protocols" / "rumad-v5-gated.yaml")
    config, sets, base = p.training(p.train_seeds[0])
    check(p, load_train(config, sets, base, str(tmp_path / "t")), 6)


@pytest.mark.slow
def test_rumad_bench_end_to_end_under_a_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench("rumad_vs_clique")
    path, out = write(tmp_path), tmp_path / "out"
    argv = ["--protocol", str(path), "--out", str(out)]  # the plot by default: in --out, never in bench/
    bench.main(argv)
    printed = capsys.readouterr().out
    assert (out / "curves.png").is_file() and f"training curves: {out / 'curves.png'}" in printed
    assert printed.startswith(
        f"protocol protocol_example ({path}, sha256 {protocol_hash(path)}): population rumad"
    )
    assert "test seeds [1000]" in printed and "| oracle |" in printed and "| silent |" in printed
    assert "| consistency best, m matched to RUMAD (best eval) |" in printed
    assert (
        "- RUMAD trained (best eval), B = 12 vs consistency best, m matched to RUMAD (best eval):" in printed
    )
    table = printed.split("### declared targets (protocol protocol_example)")[1]
    assert (
        len(
            [line for line in table.splitlines() if line.startswith("| RUMAD") or line.startswith("| oracle")]
        )
        == 3
    )
    assert json.loads((out / LEDGER).read_text(encoding="utf-8"))["sha256"] == protocol_hash(path)
    path.write_text(path.read_text(encoding="utf-8").replace("alpha: 0.05", "alpha: 0.1"), encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2
    assert "changed after its results were first written in" in capsys.readouterr().err


def test_the_rumad_bench_matches_consistency_to_the_learners_tokens_on_the_best_model() -> None:
    from debate.episode import Agent

    bench = _bench("rumad_vs_clique")
    team = [Agent(m, None) for m in ("a", "a", "b", "b")]  # type: ignore[arg-type]
    clique = bench.Tally(seat_tokens={0: 400, 1: 400, 2: 600, 3: 600}, seat_right={"a": 3, "b": 12})
    learner = bench.Tally(tokens=3000)  # 10 items: 300 tokens a task; a sample of b costs 60
    method = bench.matched_consistency(clique, learner, team, 10)
    assert (method.params.pool, method.params.m) == ("b", 5)


def _cpp_example(raw: dict[str, Any]) -> None:
    """The example turned into a CPP protocol declaring its truncation settings."""
    raw |= {"learner": "cpp", "population": "cpp", "population_digest": load_population("cpp").digest}
    raw["train"] = {"config": "examples/train_cpp_main.yaml", "set": [], "base_set": [], "dataset": "arith"}
    raw["train"] |= {"split": "train", "limit": 1000}
    raw["test"] = {"dataset": "arith", "split": "test", "items": 5, "shuffle_seed": 0}
    raw["reward"] = {"k": 1.0, "a": 1.0, "round_scale": 1.5, "beta": 0.9, "gamma": 0.9, "prune_flip": 0.0}
    raw["baselines"] = []
    raw["targets"] = [{"compare": "CPP", "against": "Full-Debate", "metric": "accuracy", "direction": ">="}]
    raw["truncate"] = ["0.85/0.95/0.95", "0.9"]


def test_a_cpp_protocol_declares_its_truncation_settings(tmp_path: Path) -> None:
    path = write(tmp_path, _cpp_example)
    assert load_protocol(path).truncate == ["0.85/0.95/0.95", "0.9"]
    args = flags(protocol=str(path), truncate=None)
    from_flags(args, "cpp", "arith", seeds=5, updates=80, items=200, truncate=["0.9", "0.75"])
    assert args.truncate == ["0.85/0.95/0.95", "0.9"]
    args = flags(protocol=str(path), truncate=["0.9", "0.75"])
    line = refusal(lambda: from_flags(args, "cpp", "arith", seeds=5, updates=80, items=200, truncate=["0.9"]))
    assert line.startswith("--truncate: ['0.9', '0.75'] contradicts protocol protocol_example"), line
    bad = write(tmp_path, lambda r: (_cpp_example(r), r.update(truncate=["0.85/2/0.95"])))
    line = refusal(lambda: load_protocol(bad))
    assert line.startswith("truncate[0]: cpp: truncate_seats must be one quantile in (0, 1] per seat"), line
    rumad = flags(protocol=str(write(tmp_path, lambda r: r.update(truncate=["0.9"]))))
    line = refusal(lambda: from_flags(rumad, "rumad", "mmlu", seeds=5, updates=150, items=300))
    assert line.startswith("truncate: this bench runs no truncation (the cpp bench's setting)"), line


def test_the_cpp_bench_labels_per_seat_truncation_as_the_paper_does() -> None:
    from bench import cpp_tally as bench

    assert bench.qlabel("0.85/0.95/0.95") == "q85/q95/q95" and bench.qlabel("0.9") == "q0.9"
    assert bench.cut("0.85/0.95/0.95") == {"truncate_seats": "0.85/0.95/0.95"}
    assert bench.cut("0.75") == {"truncate": 0.75}
    rows = bench.labels(["0.85/0.95/0.95"], ["never keep the adversary"])
    assert "CPP, truncated q85/q95/q95" in rows and "adversary: Adv-CPP, truncated q85/q95/q95" in rows
    assert "adversary: never keep the adversary" in rows
    with pytest.raises(argparse.ArgumentTypeError, match="truncate_seats must be"):
        bench.setting("0.5/x")


def test_the_cpp_bench_counts_honest_readers_keeps_by_author() -> None:
    from bench import cpp_tally as bench

    into: dict[str, list[int]] = {}
    adversarial = [False, True, False]
    # reader 0 keeps its own, the adversary's, not seat 2's; reader 1 (adversarial) is not counted;
    # reader 2 prunes the adversary and keeps seat 0's
    rows = [
        [(0, 1, 0.9), (1, 1, 0.8), (2, 0, 0.3)],
        [(1, 1, 0.5), (0, 1, 0.5), (2, 1, 0.5)],
        [(2, 0, 0.4), (0, 1, 0.7), (1, 0, 0.1)],
    ]
    bench.peer_keeps(rows, adversarial, into)
    assert into == {"adversary": [1, 2], "honest": [1, 2]}


def test_a_reward_term_added_later_may_be_left_out_only_at_its_old_value(tmp_path: Path) -> None:
    def cpp_setup(p: Any) -> Any:
        config, sets, base = p.training(p.train_seeds[0])
        return load_train(config, sets, base, str(tmp_path / "t"))

    p = load_protocol(write(tmp_path, _cpp_example))  # no `final`, no `keep_cost`: at 0
    check_setup(p, cpp_setup(p), 2)

    def final(raw: dict[str, Any]) -> None:
        _cpp_example(raw)
        raw["train"]["set"] = ["reward.final=2"]

    p = load_protocol(write(tmp_path, final))
    line = refusal(lambda: check_setup(p, cpp_setup(p), 2))
    assert line.startswith("reward.final: the protocol leaves out (so) 0.0 but"), line
    p = load_protocol(write(tmp_path, lambda r: (final(r), r["reward"].update(final=2.0))))
    check_setup(p, cpp_setup(p), 2)


def test_adv_set_and_adv_reward_reach_the_adversarial_trainings_only(tmp_path: Path) -> None:
    from bench.protocol_bench import check_setup, header
    from sweep.train.pg_config import PGConfig

    def adv(raw: dict[str, Any]) -> None:
        _cpp_example(raw)
        raw["train"]["adv_set"] = ["pg.action_states=true", "reward.final=5"]
        raw["adv_reward"] = {"final": 5.0}

    path = write(tmp_path, adv)
    p = load_protocol(path)
    setup = _bench("cpp_vs_full").setup_and_agents
    setups = {a: setup(0, 1, str(tmp_path / "out"), [], a, p)[0] for a in (False, True)}
    states = {a: s.section("pg", PGConfig).action_states for a, s in setups.items()}
    assert states == {False: False, True: True}
    assert {a: s.rewards.final for a, s in setups.items()} == {False: 0.0, True: 5.0}
    for s in setups.values():
        check_setup(p, s, 2)  # each training resolves to what the protocol declares for it
    said = "; Adv-CPP trained with pg.action_states=true, reward.final=5 and reward {'final': 5.0} over the rest\n"
    assert header(path, p).endswith(said)
    p = load_protocol(write(tmp_path, lambda r: (adv(r), r.pop("adv_reward"))))
    honest, adversarial = (setup(0, 1, str(tmp_path / "o2"), [], a, p)[0] for a in (False, True))
    check_setup(p, honest, 2)
    line = refusal(lambda: check_setup(p, adversarial, 2))
    assert line.startswith("reward.final: the protocol leaves out (so) 0.0 but"), line
    typo = write(tmp_path, lambda r: (adv(r), r.update(adv_reward={"finl": 5.0})))
    line = refusal(lambda: load_protocol(typo))
    assert line.startswith("adv_reward.finl: unknown coefficient of cpp (did you mean 'final'?)"), line
    seeded = write(tmp_path, lambda r: (adv(r), r["train"].update(adv_set=["pg.seed=3"])))
    line = refusal(lambda: load_protocol(seeded))
    assert line.startswith("train.adv_set[0]: 'pg.seed=3' is the bench's"), line


@pytest.mark.parametrize("name", ["cpp-v5-main", "cpp-v5-full-replies", "cpp-v5-du-prompts"])
def test_the_shipped_cpp_main_protocols_load_and_resolve(tmp_path: Path, name: str) -> None:
    from bench.protocol_bench import check_setup as check

    path = ROOT / "bench" / "protocols" / f"{name}.yaml"
    p = load_protocol(path)
    config, sets, base = p.training(p.train_seeds[0])
    check(p, load_train(config, sets, base, str(tmp_path / "t")), 2)


@pytest.mark.slow
def test_cpp_bench_end_to_end_under_a_protocol_with_per_seat_truncation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def tiny(raw: dict[str, Any]) -> None:
        _cpp_example(raw)
        raw["train"]["set"] = ["cpp.encoder=hashed", "cpp.behaviour_items=4", "pg.updates=1"]
        raw["train"]["set"] += ["pg.episodes_per_update=4", "eval_every=1", "eval_episodes=4"]
        raw.update(adv_restarts=2, test_seeds=[100])  # restart 1 trains with seed 1000
        raw["test"]["offset"] = 3  # a fresh sample: the items after an earlier protocol's first three
        raw["baselines"] = [
            {"label": "never keep the adversary", "method": "never_keep", "args": {"seat": 1}}
        ]
        raw["targets"] += [
            {"compare": "CPP, truncated q85/q95/q95", "against": "Full-Debate", "metric": "cost",
             "direction": "<=", "margin": -0.2, "relative": True},
            {"compare": "adversary: Adv-CPP", "against": "adversary: never keep the adversary",
             "metric": "accuracy", "direction": ">="},
        ]  # fmt: skip

    bench = _bench("cpp_vs_full")
    path, out = write(tmp_path, tiny), tmp_path / "out"
    bench.main(["--protocol", str(path), "--out", str(out), "--png", str(tmp_path / "p.png"), "--jobs", "1"])
    printed = capsys.readouterr().out
    assert printed.startswith(
        f"protocol protocol_example ({path}, sha256 {protocol_hash(path)}): population cpp"
    )
    p = load_protocol(path)
    tested = load_benchmark("arith", "test", p.test.items, 3, p.test.shuffle_seed)
    pinned = json.loads((out / LEDGER).read_text(encoding="utf-8"))["pins"]["test_items"]
    assert pinned == stable_hash([str(i.id) for i in tested]), "the bench tests the items past test.offset"
    assert f"evaluated on arith test[3:{3 + p.test.items}]" in printed
    for row in (
        "CPP, truncated q85/q95/q95",
        "Full-Debate, truncated q0.9",
        "Adv-CPP, truncated q85/q95/q95",
    ):
        assert f"| {row} |" in printed, row
    table = printed.split("### declared targets (protocol protocol_example)")[1]
    assert "| CPP, truncated q85/q95/q95 cost − Full-Debate <= -20.0% |" in table
    assert "adversary: Adv-CPP accuracy − adversary: never keep the adversary" in table
    assert re.search(r"\d of 3 targets pass", table)
    assert re.search(
        r"adversarial: Adv-CPP restart tested \(best eval.return of each\) per seed: r[01] \([-+]\d\.\d{3}, [-+]\d\.\d{3}\)",
        printed,
    ), printed
    assert (out / "adv-0-r1" / "checkpoints").is_dir()
    share = r"adversarial: Adv-CPP, honest readers keep the adversary's response, share per seed: [01]\.\d+"
    assert re.search(share, printed), printed
