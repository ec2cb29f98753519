"""The targets files (`calibration/*.yaml`) and their loader: the shipped files hold the papers' numbers
(spot-checked against the tables), every row's method builds, and each malformed file is refused with
one line naming the field."""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from debate.methods import build_method
from sweep.calibrate.targets import FIT_KINDS, FIT_TOPOLOGIES, Targets, TargetsError, load_targets

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = {name: ROOT / "calibration" / f"{name}.yaml" for name in ("cpp", "rumad", "pear")}


@pytest.fixture(scope="module")
def shipped() -> dict[str, Targets]:
    return {name: load_targets(path) for name, path in SHIPPED.items()}


def row(t: Targets, dataset: str, label: str) -> Any:
    (found,) = [r for r in t.rows if r.dataset == dataset and r.label == label]
    return found


def test_every_shipped_row_builds_and_fit_rows_are_fit_kinds(shipped: dict[str, Targets]) -> None:
    for t in shipped.values():
        for r in t.rows:
            build_method(r.method["name"], r.method["args"])
            assert set(r.agents) <= set(t.members) and r.rounds == t.rounds
            if r.cost is not None:
                assert t.reference(r.dataset) is not None
        for r in t.fit_rows():
            topology = r.method["args"].get("topology", "clique")
            assert r.method["name"] in FIT_KINDS or (
                r.method["name"] == "fixed" and topology in FIT_TOPOLOGIES
            )
            assert r.needs is None
        assert all(r.needs == "checkpoint" for r in t.rows if r.method["name"] in ("cpp", "rumad"))


def test_cpp_holds_tables_2_3_and_appendices_c_d(shipped: dict[str, Targets]) -> None:
    t = shipped["cpp"]
    assert (len(t.fit_rows()), len(t.predict_rows())) == (127, 6)
    assert Counter(r.dataset for r in t.fit_rows()) == {"math_hard": 43, "gpqa_diamond": 42, "mmlu_pro": 42}
    assert t.agents == ("grok", "gpt", "mistral") and t.rounds == 3 and t.seeds == (0, 1, 2, 3, 4, 5)
    full = row(t, "math_hard", "Full-Debate")
    assert (full.acc, full.std, full.cost) == (65.67, 3.27, 100.0)
    assert (
        full.method == {"name": "fixed", "args": {"topology": "clique"}} and t.reference("math_hard") == full
    )
    zero = row(t, "mmlu_pro", "Zero")
    assert (zero.acc, zero.std, zero.cost, zero.method["args"]) == (63.50, 2.88, 79.37, {"topology": "zero"})
    gpt = row(t, "gpqa_diamond", "GPT")
    assert (gpt.acc, gpt.std, gpt.cost, gpt.agents, gpt.method["name"]) == (
        38.67,
        3.78,
        6.78,
        ("gpt",),
        "cot",
    )
    assert (row(t, "mmlu_pro", "Vote").acc, row(t, "mmlu_pro", "Vote").cost) == (60.67, 23.75)
    rand = row(t, "gpqa_diamond", "Random")
    assert (rand.split, rand.acc, rand.method) == (
        "predict",
        65.33,
        {"name": "random_prune", "args": {"p": 0.5}},
    )
    cpp = row(t, "mmlu_pro", "CPP")
    assert (cpp.split, cpp.acc, cpp.std, cpp.cost, cpp.needs) == ("predict", 66.33, 3.33, 99.43, "checkpoint")
    # Table 3's points sit on the Appendix D curves, with Table 3's cost
    fuse = row(t, "math_hard", "Consistency-Fuse n=12")
    assert (fuse.acc, fuse.std, fuse.cost) == (64.00, 2.45, 107.89)
    assert (
        fuse.method == {"name": "consistency", "args": {"m": 12, "pool": "fuse"}} and fuse.agents == t.agents
    )
    mistral = row(t, "mmlu_pro", "Consistency-Mistral n=3")
    assert (mistral.acc, mistral.std, mistral.cost, mistral.agents) == (58.83, 1.72, 16.29, ("mistral",))
    assert row(t, "gpqa_diamond", "Consistency-GPT n=10").cost == 68.47
    grok = row(t, "math_hard", "Consistency-Grok n=2")
    assert (grok.acc, grok.std, grok.cost, grok.method["args"]) == (49.33, 2.34, None, {"m": 2})
    assert {k: (m["tokens_median"], m["tokens_q95"]) for k, m in t.members.items()} == {
        "grok": (121, 233),
        "gpt": (246, 621),
        "mistral": (311, 872),
    }
    assert t.datasets["gpqa_diamond"]["split"] == "cpp:test" and set(t.v1) == set(t.members)
    assert {"IoE-Grok, IoE-GPT, IoE-Mistral, IoE-Vote", "Consistency-Best"} <= {
        u["label"] for u in t.unavailable
    }


def test_rumad_and_pear_hold_their_tables(shipped: dict[str, Targets]) -> None:
    r = shipped["rumad"]
    assert (len(r.fit_rows()), len(r.predict_rows()), r.rounds, len(r.agents)) == (1, 15, 6, 6)
    mad = row(r, "mmlu", "MAD")
    assert (mad.acc, mad.tokens, mad.std, mad.method["args"]["topology"]) == (49.0, 62.58, None, "clique")
    assert (row(r, "mmlu", "S-MAD*").acc, row(r, "mmlu", "S-MAD*").tokens) == (61.0, 33.32)
    assert row(r, "mmlu", "RUMAD B=18").method["args"]["budget"] == 18
    nine = row(r, "gsm8k", "RUMAD N=9 B=18")
    assert (nine.acc, nine.tokens, len(nine.agents)) == (88.5, 15.9, 9)
    assert row(r, "gpqa_main", "RUMAD w/o agent activation").method["args"]["activation"] is False
    p = shipped["pear"]
    assert (len(p.fit_rows()), len(p.predict_rows()), p.rounds, p.seeds) == (24, 40, 5, (0, 1, 2, 3, 4))
    pear = row(p, "gsm8k", "PEAR Llama-3.1-8B")
    assert (pear.acc, pear.std, pear.agents, pear.method) == (
        89.5,
        0.6,
        ("llama",) * 5,
        {"name": "pear", "args": {"k": 2}},
    )
    clique = row(p, "truthfulqa", "Clique Qwen-2.5-14B")
    assert (clique.split, clique.acc, clique.std, clique.agents) == ("fit", 87.5, 0.9, ("qwen25",) * 5)
    assert clique.method["args"] == {"topology": "clique", "protocol": "critique_revise"}
    cot = row(p, "math500", "CoT Llama-3.1-8B")
    assert (cot.acc, cot.std, cot.agents) == (13.5, 2.2, ("llama",))


BASE: dict[str, Any] = {
    "paper": "a test paper",
    "population": "tiny",
    "members": {"grok": {"price_in": 0.2, "price_out": 0.5}, "gpt": {}},
    "agents": ["grok", "gpt"],
    "rounds": 2,
    "seeds": [0, 1],
    "cost_reference": "Full",
    "datasets": {"g": {"name": "gsm8k", "split": "test", "limit": 5}},
    "v1": {"grok": {"skill": 0.6}, "gpt": {"skill": 0.4}},
    "fit": [
        {"label": "Grok", "dataset": "g", "method": "cot", "agents": ["grok"], "acc": 40, "where": "T1"},
        {"label": "Full", "dataset": "g", "method": {"name": "fixed"}, "acc": 50, "cost": 100, "where": "T1"},
    ],
    "predict": [
        {
            "label": "Ring",
            "dataset": "g",
            "method": {"name": "fixed", "args": {"topology": "ring"}},
            "acc": 45,
            "where": "T1",
        }
    ],
    "unavailable": [{"label": "X", "where": "T2", "reason": "not implemented"}],
}


def write(tmp_path: Path, doc: Any, name: str = "t.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def refused(path: Path, *expect: str) -> str:
    with pytest.raises(TargetsError) as e:
        load_targets(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    for part in expect:
        assert part in msg, msg
    return msg


def test_a_valid_file_loads_with_team_defaults(tmp_path: Path) -> None:
    t = load_targets(write(tmp_path, BASE))
    assert [r.key for r in t.fit_rows()] == ["g/Grok", "g/Full"] and [r.key for r in t.predict_rows()] == [
        "g/Ring"
    ]
    ring = t.predict_rows()[0]
    assert (ring.agents, ring.rounds, ring.method, ring.std, ring.needs) == (
        ("grok", "gpt"),
        2,
        {"name": "fixed", "args": {"topology": "ring"}},
        None,
        None,
    )
    assert t.fit_rows()[0].agents == ("grok",) and t.reference("g") == t.fit_rows()[1]
    assert t.members["gpt"] == {"price_in": 0.0, "price_out": 0.0} and t.datasets["g"]["limit"] == 5
    assert t.unavailable == ({"label": "X", "where": "T2", "reason": "not implemented"},)
    # a label may repeat across datasets, and fixed zero is a fit kind
    doc = copy.deepcopy(BASE)
    doc["datasets"]["h"] = {"name": "arith", "split": "test"}
    doc["fit"].append(
        {
            "label": "Grok",
            "dataset": "h",
            "method": {"name": "fixed", "args": {"topology": "zero"}},
            "acc": 1,
            "where": "T",
        }
    )
    assert len(load_targets(write(tmp_path, doc)).fit_rows()) == 3


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set `value` at a dotted path (`fit.0.acc`); the sentinel DROP deletes the key."""

    def go(doc: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node: Any = doc
        for part in head:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key: Any = int(last) if isinstance(node, list) else last
        if value is DROP:
            del node[key]
        else:
            node[key] = value

    return go


DROP = object()
CASES = [
    ("sede", [0], ("sede: unknown key", "did you mean 'seeds'")),
    ("fit.0.acx", 40, ("fit[0].acx: unknown key", "did you mean 'acc'")),
    ("paper", DROP, ("paper: required key is missing",)),
    ("fit.0.where", DROP, ("fit[0].where: required key is missing",)),
    ("agents", ["grok", "gtp"], ("agents[1]: 'gtp' is not a member", "did you mean 'gpt'")),
    ("fit.0.agents", ["claude"], ("fit[0].agents[0]: 'claude' is not a member",)),
    ("fit.0.dataset", "gg", ("fit[0].dataset: 'gg' is not a key of datasets", "did you mean 'g'")),
    ("datasets.g.name", "gsm8", ("datasets.g.name: unknown benchmark 'gsm8'", "did you mean 'gsm8k'")),
    ("datasets.g.split", "tset", ("datasets.g: gsm8k has no split 'tset'",)),
    ("fit.0.method", "cott", ("fit[0].method: unknown method 'cott'", "did you mean 'cot'")),
    ("fit.0.method", {"name": "cot_sc", "args": {"m": 0}}, ("fit[0].method: cot_sc: m must be >= 1",)),
    ("predict.0.method", {"name": "fixed", "args": {"topolgy": "ring"}}, ("predict[0].method:", "'topolgy'")),
    ("predict.0.method", {"name": "fixed", "arg": {}}, ("predict[0].method: give a method name",)),
    ("predict.0.label", "Grok", ("predict[0].label: 'Grok' appears twice in dataset 'g' (also fit[0])",)),
    ("fit.0.acc", 101, ("fit[0].acc:", "less than or equal to 100")),
    ("fit.0.acc", True, ("fit[0].acc:", "expected a number")),
    ("fit.0.std", -1, ("fit[0].std:", "greater than or equal to 0")),
    ("fit.1.cost", 1200, ("fit[1].cost:", "less than or equal to 1000")),
    ("predict.0.tokens", ".inf", ("predict[0].tokens:",)),
    (
        "fit.1.method",
        {"name": "fixed", "args": {"topology": "star"}},
        ("fit[1].method: {'name': 'fixed'", "'star'", "move it to predict"),
    ),
    (
        "fit.1.method",
        {"name": "random_prune"},
        ("fit[1].method:", "fit rows are single agents, consistency, vote, zero or clique"),
    ),
    ("cost_reference", DROP, ("fit[1].cost: 'g' has no cost_reference row; set cost_reference",)),
    ("cost_reference", "Zero", ("fit[1].cost: 'g' has no cost_reference row; add a 'Zero' row",)),
    ("seeds", [0, 0], ("seeds: [0, 0] repeats a seed",)),
    ("seeds", [-1], ("seeds[0]:",)),
    ("seeds", ["1"], ("seeds[0]:",)),
    ("seeds", [], ("seeds:",)),
    ("population", "../x", ("population:", "pattern")),
    ("population", "v1", ("population: v1 is the engine's own arguments",)),
    ("predict.0.needs", "weights", ("predict[0].needs:", "'checkpoint'")),
    ("fit.0.needs", "checkpoint", ("fit[0].needs: a fit row cannot wait for a checkpoint",)),
    ("v1.grok", {"skil": 0.6}, ("v1.grok:", "skil")),
    ("v1.gpt", DROP, ("v1: give exactly the members' v1 engine args",)),
    (
        "members.grok",
        {"tokens_median": 300, "tokens_q95": 200},
        ("members.grok.tokens_q95: below tokens_median",),
    ),
    ("members.grok", {"prices_in": 1}, ("members.grok.prices_in: unknown key", "did you mean 'price_in'")),
    ("fit", [], ("fit:", "at least 1")),
    ("members", {}, ("members:", "at least 1")),
    ("fit.0.rounds", 0, ("fit[0].rounds:",)),
    ("order", ["grok", "gtp"], ("order[1]: 'gtp' is not a member", "did you mean 'gpt'")),
    ("order", ["grok", "grok"], ("order[1]: 'grok' appears twice",)),
    ("order", ["grok"], ("order:", "at least 2")),
]


@pytest.mark.parametrize("where, value, expect", CASES, ids=[f"{c[0]}={c[1]!r}" for c in CASES])
def test_each_mistake_is_one_line_naming_the_field(
    tmp_path: Path, where: str, value: Any, expect: tuple[str, ...]
) -> None:
    doc = copy.deepcopy(BASE)
    _set(where, value)(doc)
    refused(write(tmp_path, doc), *expect)


def test_unreadable_files_are_one_line(tmp_path: Path) -> None:
    refused(tmp_path / "missing.yaml", "targets file not found")
    refused(tmp_path, "not a regular file")
    bad = tmp_path / "bad.yaml"
    bad.write_text("fit: [\n", encoding="utf-8")
    refused(bad, "not valid YAML")
    bad.write_bytes(b"paper: \xff\xfe\n")
    refused(bad, "not UTF-8")
    bad.write_text("paper: a\npaper: b\n", encoding="utf-8")
    refused(bad, "key 'paper' appears twice (lines 1 and 2)")
    bad.write_text("- a list\n", encoding="utf-8")
    refused(bad, "give a mapping")
    bad.write_text("# " + "x" * 256_000 + "\n", encoding="utf-8")
    refused(bad, "larger than 256,000 bytes")


def test_digest_is_the_files_sha256_and_follows_any_number(tmp_path: Path) -> None:
    path = write(tmp_path, BASE)
    t = load_targets(path)
    assert t.digest == hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    assert load_targets(write(tmp_path, BASE, "copy.yaml")).digest == t.digest
    doc = copy.deepcopy(BASE)
    doc["fit"][0]["acc"] = 40.01
    assert load_targets(write(tmp_path, doc)).digest != t.digest
