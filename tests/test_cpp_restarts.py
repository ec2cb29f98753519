"""CPP's and Adv-CPP's restarts under a protocol (bench/cpp_restarts.py; `restarts`, `choice`,
`adv_restarts` and `adv_choice` in bench/protocol.py): which restart the cpp bench tests, the refusals of a choice that could see
training or test items, and trainings taken from an earlier run (`--reuse`)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bench/ is not an installed package

from bench.cpp_restarts import choose, chosen, most_accurate, reuse, stored_fingerprint  # noqa: E402
from bench.protocol import load_protocol  # noqa: E402
from bench.protocol_bench import check_choice, header, pins  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from debate.policies import checkpoint as ckpt  # noqa: E402
from debate.policies.fuseglu import build, weights_of  # noqa: E402
from debate.policies.pruning import PruningArch  # noqa: E402
from sweep.config.sweep import DatasetSpec  # noqa: E402
from tests.test_protocols import _bench, _cpp_example, refusal, write  # noqa: E402

CHOICE = {"dataset": "arith", "split": "train", "offset": 1000, "items": 3, "shuffle_seed": 0, "seeds": [200]}


def _restarts(raw: dict[str, Any], **choice: Any) -> None:
    _cpp_example(raw)
    raw.update(adv_restarts=2, test_seeds=[100], adv_choice={**CHOICE, **choice})


def test_adv_restarts_are_the_cpp_benchs_and_never_reuse_a_seed(tmp_path: Path) -> None:
    path = write(tmp_path, lambda r: (_cpp_example(r), r.update(adv_restarts=2, test_seeds=[100])))
    assert load_protocol(path).adv_restarts == 2
    assert "Adv-CPP the best of 2 trainings per seed on training items" in header(path, load_protocol(path))
    assert "best of" not in header(
        write(tmp_path, _cpp_example), load_protocol(write(tmp_path, _cpp_example))
    )
    line = refusal(
        lambda: load_protocol(write(tmp_path, lambda r: r.update(adv_restarts=2, test_seeds=[100])))
    )
    assert line.startswith("adv_restarts: only the cpp bench trains Adv-CPP; remove it"), line

    def clash(raw: dict[str, Any]) -> None:
        _cpp_example(raw)
        raw.update(adv_restarts=3, test_seeds=[2000 + s for s in raw["train_seeds"]])

    line = refusal(lambda: load_protocol(write(tmp_path, clash)))
    assert line.startswith("adv_restarts: restart seed 2000 (a train seed + 1000 x restart)"), line
    line = refusal(
        lambda: load_protocol(write(tmp_path, lambda r: (_cpp_example(r), r.update(adv_restarts=9))))
    )
    assert line.startswith("adv_restarts:"), line


def test_the_restart_with_the_best_training_item_evaluation_is_tested_without_adv_choice() -> None:
    run = lambda *returns: SimpleNamespace(history=[{"loss": 1.0}, *({"eval.return": r} for r in returns)])  # noqa: E731
    assert chosen([run(0.1, 0.3), run(0.2, 0.5), run(0.5)]) == 1
    assert chosen([run(0.4), run(-0.2, 0.1)]) == 0
    line = refusal(lambda: chosen([run(0.4), run()]))
    assert line.startswith("adv_restarts: a restart was never evaluated; set eval_every > 0"), line
    never = lambda path: pytest.fail("no accuracy without adv_choice")  # noqa: E731
    assert choose([run(0.1), run(0.3)], False, never) == (
        1,
        "adversarial: Adv-CPP restart tested (best eval.return of each)",
        "r1 (+0.100, +0.300)",
    )
    assert choose([run()], False, never) == (0, "", "")  # one training: nothing to choose


def test_the_cpp_bench_refuses_restarts_it_could_not_choose_between(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def never_evaluated(raw: dict[str, Any]) -> None:
        _cpp_example(raw)
        raw["train"]["set"] = ["cpp.encoder=hashed", "eval_every=0"]
        raw.update(adv_restarts=2, test_seeds=[100])

    path, out = write(tmp_path, never_evaluated), tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        _bench("cpp_vs_full").main(["--protocol", str(path), "--out", str(out), "--jobs", "1"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: adv_restarts: choosing a restart needs evaluations; set eval_every > 0 in train.set"
    assert not out.exists()


def test_adv_choice_names_items_outside_the_training_and_the_test(tmp_path: Path) -> None:
    p = load_protocol(write(tmp_path, _restarts))
    assert p.adv_choice is not None and p.adv_choice.offset == 1000 and p.adv_choice.seeds == [200]
    said = header(write(tmp_path, _restarts), p)
    assert (
        "Adv-CPP the best of 2 trainings per seed by accuracy under the adversary on arith train[1000:1003] (shuffle seed 0), seeds [200]"
        in said
    )
    cases = [
        (lambda r: (_restarts(r), r.update(adv_restarts=1)), "adv_choice: nothing to choose between; set adv_restarts >= 2"),
        (lambda r: _restarts(r, split="test"), "adv_choice.split: 'test' is the test items' split"),
        (lambda r: _restarts(r, seeds=[300, 100]), "adv_choice.seeds: 100 is a test seed"),
        (lambda r: _restarts(r, seeds=[300, 300]), "adv_choice.seeds: seed 300 appears twice"),
        (lambda r: _restarts(r, item=3), "adv_choice.item: unknown protocol key (did you mean 'items'?)"),
    ]  # fmt: skip
    for edit, start in cases:
        line = refusal(lambda e=edit: load_protocol(write(tmp_path, e)))
        assert line.startswith(start), line


def test_cpps_own_restarts_are_chosen_on_the_honest_team_by_their_own_keys(tmp_path: Path) -> None:
    def own(raw: dict[str, Any], **choice: Any) -> None:
        _cpp_example(raw)
        raw.update(restarts=3, test_seeds=[100], choice={**CHOICE, **choice})

    p = load_protocol(write(tmp_path, own))
    assert (p.restarts, p.adv_restarts, p.adv_choice) == (3, 1, None)
    said = header(write(tmp_path, own), p)
    assert (
        "; CPP the best of 3 trainings per seed by accuracy on the honest team on arith train[1000:1003]"
        in said
    )
    assert "Adv-CPP the best" not in said
    cases = [
        (lambda r: (own(r), r.update(restarts=1)), "choice: nothing to choose between; set restarts >= 2"),
        (lambda r: own(r, split="test"), "choice.split: 'test' is the test items' split"),
        (lambda r: own(r, seeds=[100]), "choice.seeds: 100 is a test seed"),
        (lambda r: (own(r), r.update(test_seeds=[2000 + s for s in r["train_seeds"]])), "restarts: restart seed 2000"),
        (lambda r: r.update(restarts=2, test_seeds=[100]), "restarts: only the cpp bench restarts its trainings"),
    ]  # fmt: skip
    for edit, start in cases:
        line = refusal(lambda e=edit: load_protocol(write(tmp_path, e)))
        assert line.startswith(start), line
    runs = [SimpleNamespace(best=None, policy=Path(f"r{i}.npz")) for i in range(2)]
    scores = {"r0.npz": 0.6, "r1.npz": 0.55}
    key = "vanilla: CPP restart tested (accuracy of each on the choice items)"
    assert choose(runs, True, scores.__getitem__, "vanilla: CPP") == (0, key, "r0 (0.600, 0.550)")


def test_the_choice_items_are_never_a_trainings_and_are_pinned() -> None:
    dataset = DatasetSpec(name="arith", split="train", limit=1000, offset=0, seed=7)  # shuffled
    setup = SimpleNamespace(base=SimpleNamespace(datasets=[dataset]))
    past = load_benchmark("arith", "train", 3, 1000)
    trained = load_benchmark("arith", "train", 1000, 0, 7)
    outside = [i for i in past if i.id not in {t.id for t in trained}]
    check_choice([setup], outside)  # type: ignore[list-item]
    inside = next(i for i in trained if i.id not in {o.id for o in outside})
    line = refusal(lambda: check_choice([setup], [*outside, inside]))  # type: ignore[list-item]
    assert line.startswith(f"adv_choice: item {inside.id} is one the training draws from"), line
    assert "choice_items" not in pins([], past[:1])
    assert pins([], past[:1], past)["choice_items"] != pins([], past[:1], past[:2])["choice_items"]
    assert set(pins([], past[:1], (), past)) == {"training", "test_items", "honest_choice_items"}
    line = refusal(lambda: check_choice([setup], [inside], "choice"))  # type: ignore[list-item]
    assert line.startswith(f"choice: item {inside.id} is one the training draws from"), line


def test_the_most_accurate_restart_is_tested_the_first_on_a_tie() -> None:
    runs = [SimpleNamespace(best=Path(f"r{i}/best.npz"), policy=Path(f"r{i}/policy.npz")) for i in range(3)]
    runs[2].best = None  # never evaluated: its final policy
    scores = {"r0/best.npz": 0.41, "r1/best.npz": 0.47, "r2/policy.npz": 0.47}
    assert most_accurate(runs, scores.__getitem__) == (1, [0.41, 0.47, 0.47])
    scores["r2/policy.npz"] = 0.5
    assert most_accurate(runs, scores.__getitem__)[0] == 2
    key, note = (
        "adversarial: Adv-CPP restart tested (accuracy of each on the choice items)",
        "r2 (0.410, 0.470, 0.500)",
    )
    assert choose(runs, True, scores.__getitem__) == (2, key, note)


def test_reuse_copies_only_the_trainings_the_run_lacks(tmp_path: Path) -> None:
    source, out = tmp_path / "earlier", tmp_path / "out"
    for tag in ("adv-0", "adv-0-r1", "vanilla-0"):
        (source / tag / "checkpoints").mkdir(parents=True)
        (source / tag / "checkpoints" / "best.npz").write_bytes(tag.encode())
    (out / "vanilla-0").mkdir(parents=True)  # the run's own: never overwritten
    (out / ".adv-0.tmp").mkdir()  # what a killed copy left
    wanted = {"vanilla-0": "f0", "adv-0": "f1", "adv-0-r1": "f2", "adv-1": "f3"}
    assert reuse(source, out, wanted) == ["adv-0", "adv-0-r1"]
    assert (out / "adv-0-r1" / "checkpoints" / "best.npz").read_bytes() == b"adv-0-r1"
    assert not (out / "vanilla-0" / "checkpoints").exists() and not (out / ".adv-0.tmp").exists()
    assert not (out / "adv-0" / "checkpoints" / "best.npz").samefile(
        source / "adv-0" / "checkpoints" / "best.npz"
    )
    assert reuse(source, out, {"adv-0": "f1"}) == []
    assert refusal(lambda: reuse(tmp_path / "none", out, {})).startswith("--reuse: ")
    assert refusal(lambda: reuse(out, out, {})).startswith("--reuse: the same directory as --out")


def test_reuse_leaves_a_training_of_another_config_where_it_is(tmp_path: Path) -> None:
    source, out = tmp_path / "earlier", tmp_path / "out"
    arch = PruningArch(3, hidden=16)
    for tag, update, fingerprint in (("adv-0", 2, "old"), ("adv-0", 4, "new"), ("vanilla-0", 4, "other")):
        path = source / tag / "checkpoints" / f"policy-u{update:06d}.npz"
        ckpt.save_checkpoint(path, arch.to_dict(), weights_of(build(arch, 0)), {"fingerprint": fingerprint})
    assert stored_fingerprint(source / "adv-0") == "new"  # the newest checkpoint's
    assert reuse(source, out, {"adv-0": "new", "vanilla-0": "new"}) == ["adv-0"]
    assert (out / "adv-0").is_dir() and not (out / "vanilla-0").exists()


@pytest.mark.slow
def test_the_cpp_bench_chooses_on_the_declared_items_and_reuses_an_earlier_runs_trainings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def tiny(raw: dict[str, Any]) -> None:
        _restarts(raw)
        raw.update(restarts=2, choice={**CHOICE, "offset": 1003, "seeds": [201]})  # CPP's own, too
        raw["train"]["set"] = ["cpp.encoder=hashed", "cpp.behaviour_items=4", "pg.updates=1"]
        raw["train"]["set"] += ["pg.episodes_per_update=4", "eval_every=0"]  # the choice needs no evaluation
        raw["baselines"] = [
            {"label": "never keep the adversary", "method": "never_keep", "args": {"seat": 1}}
        ]
        raw["targets"] = [{"compare": "adversary: Adv-CPP", "against": "adversary: never keep the adversary",
                           "metric": "accuracy", "direction": ">="}]  # fmt: skip
        raw["truncate"] = ["0.9"]

    bench, path = _bench("cpp_vs_full"), write(tmp_path, tiny)
    first, second, printed = tmp_path / "first", tmp_path / "second", []
    for out, more in ((first, []), (second, ["--reuse", str(first)])):
        flags = ["--out", str(out), "--png", str(tmp_path / "p.png"), "--jobs", "1", *more]
        bench.main(["--protocol", str(path), *flags])
        printed.append(capsys.readouterr().out)
    taken = f"- trainings taken from {first} (those of the same fingerprint, each resumed from its checkpoints): 4 of 4\n"
    assert taken in printed[1] and "trainings taken from" not in printed[0]
    assert printed[1].replace(taken, "") == printed[0]  # the same trainings, the same choice, the same rows
    choice = r"adversarial: Adv-CPP restart tested \(accuracy of each on the choice items\) per seed: r[01] \([01]\.\d{3}, [01]\.\d{3}\)"
    assert re.search(choice, printed[0]), printed[0]
    own = r"vanilla: CPP restart tested \(accuracy of each on the choice items\) per seed: r[01] \([01]\.\d{3}, [01]\.\d{3}\)"
    assert re.search(own, printed[0]), printed[0]
    per_seed = r"- accuracy per seed, adversary: Adv-CPP: [01]\.\d{3}\n- accuracy per seed, adversary: never keep the adversary: [01]\.\d{3}\n"
    assert re.search(per_seed, printed[0]), printed[0]
    assert (second / "adv-0-r1" / "checkpoints").is_dir() and (first / "adv-0-r1" / "checkpoints").is_dir()
    ledger = json.loads((second / "protocol.json").read_text(encoding="utf-8"))
    assert set(ledger["pins"]) == {"training", "test_items", "choice_items", "honest_choice_items"}
    assert (second / "vanilla-0-r1" / "checkpoints").is_dir()


def test_the_restart_agreement_centres_each_seed_and_names_a_missing_policy(tmp_path: Path) -> None:
    agreement = _bench("cpp_restart_agreement")
    got = agreement.centred([[0.5, 0.7], [0.1, 0.1, 0.4]])
    assert got == pytest.approx([-0.1, 0.1, -0.1, -0.1, 0.2])
    (tmp_path / "vanilla-0-r1").mkdir()
    (tmp_path / "vanilla-0-r1" / "policy.npz").write_bytes(b"")
    assert agreement.policy_of(tmp_path, 0, 1) == str(tmp_path / "vanilla-0-r1" / "policy.npz")
    (tmp_path / "vanilla-0-r1" / "checkpoints").mkdir()
    (tmp_path / "vanilla-0-r1" / "checkpoints" / "best.npz").write_bytes(b"")
    assert agreement.policy_of(tmp_path, 0, 1).endswith("checkpoints/best.npz")  # the best first
    line = refusal(lambda: agreement.policy_of(tmp_path, 0, 0))
    assert line.startswith(f"--out: {tmp_path / 'vanilla-0'} holds no policy"), line
