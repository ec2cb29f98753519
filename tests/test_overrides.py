"""`--set` by an entry's name: `methods.rumad.args.checkpoint=PATH`, `datasets.gsm8k.limit=5`, bare
method names as mappings, and one-line errors for a name that is missing or names several entries."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweep.cli import main
from sweep.config.overrides import apply_override
from sweep.config.sweep import ConfigError, load_config
from tests.conftest import ROOT

RAW: dict[str, Any] = {
    "datasets": [{"name": "arith", "limit": 5}, {"name": "gsm8k", "split": "test"}],
    "methods": ["cot", {"name": "fixed", "args": {"topology": "ring"}}, {"name": "rumad"}, {"name": "smad"},
                {"name": "smad", "args": {"structure": "ring"}}],
    "seeds": [0, 1],
    "agents": ["strong", {"model": "weak", "count": 2}],  # bare names here are models, not entry names
}  # fmt: skip


def applied(*items: str) -> dict[str, Any]:
    raw = copy.deepcopy(RAW)
    for item in items:
        apply_override(raw, item)
    return raw


def test_a_method_and_a_dataset_by_name() -> None:
    raw = applied(
        "methods.rumad.args.checkpoint=runs/x/policy.npz",
        "datasets.gsm8k.limit=5",
        "methods.fixed.args.topology=star",
    )
    assert raw["methods"][2] == {"name": "rumad", "args": {"checkpoint": "runs/x/policy.npz"}}
    assert raw["datasets"][1] == {"name": "gsm8k", "split": "test", "limit": 5}
    assert raw["methods"][1]["args"] == {"topology": "star"}
    assert (
        raw["methods"][3:] == RAW["methods"][3:] and raw["datasets"][0] == RAW["datasets"][0]
    )  # the others untouched


def test_a_bare_method_name_becomes_its_mapping() -> None:
    assert applied("methods.cot.args.k=1")["methods"][0] == {"name": "cot", "args": {"k": 1}}
    assert applied("methods.0.args.k=2")["methods"][0] == {"name": "cot", "args": {"k": 2}}  # by index too
    assert applied("methods.cot={name: cot_sc}")["methods"][0] == {"name": "cot_sc"}  # the entry whole


def test_indices_still_work_and_win_over_names() -> None:
    raw = applied("methods.2.args.budget=3", "datasets.0.limit=7")
    assert raw["methods"][2]["args"] == {"budget": 3} and raw["datasets"][0]["limit"] == 7


@pytest.mark.parametrize(
    ("item", "fragments"),
    [
        ("methods.rumda.args.x=1", ["--set methods.rumda.args.x:", "no entry of methods is named 'rumda'",
                                    "(did you mean 'rumad'?)", "names: cot, fixed, rumad, smad", "index 0 to 4"]),
        ("datasets.gsm8.limit=1", ["no entry of datasets is named 'gsm8'", "(did you mean 'gsm8k'?)"]),
        ("methods.smad.args.structure=star", ["2 entries of methods are named 'smad' (methods.3, methods.4)",
                                              "e.g. --set methods.4.args.structure=..."]),
        ("seeds.first=3", ["'first' is not an index of seeds; use 0 to 1"]),  # a list of unnamed values
        ("datasets.cot.limit=1", ["no entry of datasets is named 'cot'"]),
        ("agents.strong.count=2", ["'strong' is not an index of agents; use 0 to 1"]),  # bare names: methods only
        ("methods.9.args.x=1", ["'9' is not an index of methods; use 0 to 4"]),
    ],
)  # fmt: skip
def test_a_name_that_is_missing_or_repeated_is_one_line(item: str, fragments: list[str]) -> None:
    raw = copy.deepcopy(RAW)
    with pytest.raises(ConfigError) as e:
        apply_override(raw, item)
    assert "\n" not in str(e.value)
    for f in fragments:
        assert f in str(e.value)
    assert raw == RAW  # nothing half-applied


def test_an_empty_list_says_so() -> None:
    with pytest.raises(ConfigError, match="methods is an empty list; set it whole"):
        apply_override({"methods": []}, "methods.cot.args.k=1")


def test_every_command_taking_set_reads_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep (validate, plan), a training's base sweep (`overrides:`) and a study read the same rule."""
    sweep = ROOT / "examples" / "rumad_simulated.yaml"
    cfg = load_config(sweep, ["methods.gd.args.prompt_style=pear", "datasets.mmlu.limit=3"])
    assert cfg.datasets[0].limit == 3 and dict(cfg.methods[3].args)["prompt_style"] == "pear"
    assert (
        main(
            [
                "validate",
                str(sweep),
                "--set",
                "datasets.mmlu.limit=2",
                "--set",
                "methods.gd.args.prompt_style=rumad",
            ]
        )
        == 0
    )
    assert (
        main(["plan", str(sweep), "--set", "methods.rumad.args.budget=3"]) == 2
    )  # rumad names entries 5 and 6
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --set methods.rumad.args.budget: 2 entries of methods are named 'rumad' (methods.5, methods.6); "
        "pick one by index, e.g. --set methods.6.args.budget=..."
    ]
    train = yaml.safe_load((ROOT / "examples" / "train_rumad_simulated.yaml").read_text())
    train |= {"sweep": str(sweep), "overrides": ["datasets.mmlu.split=rumad:dev", "datasets.mmlu.limit=4"]}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(train))
    assert main(["train", str(tmp_path / "t.yaml"), "--validate", "--out", str(tmp_path / "t")]) == 0
    assert main(["train", str(tmp_path / "t.yaml"), "--validate", "--base-set", "datasets.mmlx.limit=1"]) == 2
    assert "no entry of datasets is named 'mmlx' (did you mean 'mmlu'?)" in capsys.readouterr().err
    study = ROOT / "examples" / "study_random_simulated.yaml"
    assert main(["study", str(study), "--validate", "--base-set", "datasets.arith.limit=2"]) == 0
    assert main(["study", str(study), "--validate", "--base-set", "datasets.arit.limit=2"]) == 2
    assert "no entry of datasets is named 'arit' (did you mean 'arith'?)" in capsys.readouterr().err
