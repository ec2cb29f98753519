"""Config validation and the CLI's usage errors: exit 2, one line naming the field, nothing written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from sweep.cli import main
from sweep.config.sweep import ConfigError, load_config
from sweep.run.plan import build_plan
from tests.conftest import ROOT, sweep_cmd

GOOD = {
    "name": "t",
    "output_dir": "OUT",
    "models": {"sim": {"engine": "simulated", "args": {"skill": 0.6}}},
    "agents": ["sim", {"model": "sim", "count": 2}],
    "datasets": [{"name": "arith", "limit": 5}],
    "methods": ["cot", {"name": "fixed", "args": {"topology": "ring"}}],
    "rounds": 2,
    "seeds": [0, 1],
}


def write(tmp_path: Path, cfg: dict) -> Path:
    cfg = yaml.safe_load(yaml.safe_dump(cfg).replace("OUT", str(tmp_path / "out")))
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def mutate(**changes: object) -> dict:
    cfg = yaml.safe_load(yaml.safe_dump(GOOD))
    for k, v in changes.items():
        node = cfg
        *path, last = k.split("__")
        for part in path:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = v
    return cfg


BAD = [
    (mutate(methods=["cot", {"name": "fixd"}]), "did you mean 'fixed'"),
    (
        mutate(datasets=[{"name": "arith", "limt": 5}]),
        "datasets[0].limt: unknown key (did you mean 'limit'?)",
    ),
    (mutate(rounds=-1), "rounds:"),
    (mutate(roundz=3), "did you mean 'rounds'"),
    (mutate(methods=[{"name": "fixed", "args": {"topolgy": "ring"}}]), "did you mean 'topology'"),
    (mutate(methods=[{"name": "fixed", "args": {"topology": "hexagon"}}]), "unknown topology"),
    (mutate(agents=["simm"]), "agents[0]: model 'simm' is not in models (did you mean 'sim'?)"),
    (mutate(models={"sim": {"engine": "simulatd"}}), "did you mean 'simulated'"),
    (mutate(datasets=[{"name": "gsm8"}]), "did you mean 'gsm8k'"),
    (mutate(seeds=[]), "seeds:"),
]


@pytest.mark.parametrize("cfg,fragment", BAD, ids=[b[1][:30] for b in BAD])
def test_bad_configs_exit_2_with_one_line_and_write_nothing(
    tmp_path: Path, capsys, cfg: dict, fragment: str
) -> None:
    p = write(tmp_path, cfg)
    for command in ("validate", "plan", "run"):
        assert main([command, str(p)]) == 2
        err = capsys.readouterr().err.strip()
        assert fragment in err, err
        assert len(err.splitlines()) == 1, err
        assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_missing_file_and_bad_override(tmp_path: Path, capsys) -> None:
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err
    p = write(tmp_path, GOOD)
    assert main(["validate", str(p), "--set", "rounds"]) == 2
    assert "expected key=value" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_overrides_apply_before_validation(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD)
    cfg = load_config(
        p, ["rounds=4", "datasets.0.limit=3", "methods.1.args.topology=star"], out=str(tmp_path / "o2")
    )
    assert cfg.rounds == 4 and cfg.datasets[0].limit == 3 and cfg.output_dir == str(tmp_path / "o2")
    with pytest.raises(ConfigError, match="rounds"):
        load_config(p, ["rounds=-2"])


def test_plan_counts_and_changes_nothing(tmp_path: Path, capsys) -> None:
    p = write(tmp_path, GOOD)
    cfg = load_config(p)
    plan = build_plan(cfg)
    assert len(plan.groups) == 4  # 2 methods x 1 dataset x 2 seeds
    assert len(plan.tasks) == 20
    assert plan.calls() == 2 * 5 * 1 + 2 * 5 * 3 * 3  # cot: 1 call; ring: 3 agents x 3 rounds
    assert main(["plan", str(p)]) == 0
    assert "20 episodes, up to 100 model calls" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_episode_ids_are_deterministic_and_sensitive(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD)
    ids = [t.episode_id for t in build_plan(load_config(p)).tasks]
    assert ids == [t.episode_id for t in build_plan(load_config(p)).tasks]
    assert len(set(ids)) == len(ids)
    other = {t.episode_id for t in build_plan(load_config(p, ["rounds=3"])).tasks}
    assert len(other & set(ids)) == 10  # cot ignores rounds; the ring episodes change
    moved = {t.episode_id for t in build_plan(load_config(p, out=str(tmp_path / "elsewhere"))).tasks}
    assert moved == set(ids)  # where results go is not part of an episode's identity


def test_python_dash_m_sweep_is_the_console_script(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD)
    proc = subprocess.run(sweep_cmd("validate", str(p)), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and "valid sweep config" in proc.stdout
    proc = subprocess.run(sweep_cmd("frobnicate"), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_example_validates_and_builds_its_methods(path: Path) -> None:
    from debate.methods import build_method
    from sweep.study.config import load_study

    if path.name.startswith("study_"):
        setup = load_study(path)
        assert setup.base.methods and setup.space
    elif path.name.startswith("train_"):
        from sweep.train.config import load_train

        assert build_plan(load_train(path).base).tasks
    else:
        cfg = load_config(path)
        for m in cfg.methods:
            build_method(m.name, m.args)  # method args are checked when the method is built
        assert build_plan(cfg)
