"""A population file's content joins the episode id: editing any number of the file changes every id
of the models on it, and only of them; v1 models' ids stay those they always were (the v1 fixture,
`tests/test_population_v1.py`, pins them too); a population that cannot be read when the plan is made
is a one-line config error naming the model's field. Each MLflow child run names the population and
digest of each of its models on a population file. `sweep list populations` shows each packaged one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from actors.populations import load
from sweep.config.sweep import ConfigError, validate
from sweep.run.plan import build_plan
from sweep.store.results import ResultStore
from tests.v1_fixture import config as v1_config
from tests.v1_fixture import read_corpus

POPULATION: dict[str, Any] = {
    "version": "v2",
    "description": "two members for the id tests",
    "members": {
        "a": {"skill": {"default": 0.5, "arith": 1.0}, "spread": 1.0, "calibration": 0.8},
        "b": {"skill": {"default": -0.5}, "spread": 1.2, "calibration": 0.6},
    },
    "benchmarks": {"default": {"item_spread": 1.0, "misconception": 0.4}},
}


def _write(path: Path, content: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    st = path.stat()  # a new mtime, even within the clock's resolution: the loader caches by (mtime, size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _config(pop: Path) -> Any:
    return validate(
        {
            "models": {
                "a": {"engine": "simulated", "args": {"population": str(pop), "member": "a"}},
                "b": {"engine": "simulated", "args": {"population": str(pop), "member": "b"}},
                "old": {"engine": "simulated", "args": {"skill": 0.7}},
            },
            "agents": ["a", "b", "a"],
            "datasets": [{"name": "arith", "limit": 3}],
            "methods": ["cot", {"name": "fixed", "args": {"topology": "clique"}}],
            "seeds": [0, 1],
        }
    )


def _ids(cfg: Any) -> list[str]:
    return [t.episode_id for t in build_plan(cfg).tasks]


def test_the_digest_joins_every_id_of_a_population_team(tmp_path: Path) -> None:
    pop = tmp_path / "pop.yaml"
    _write(pop, POPULATION)
    first = _ids(_config(pop))
    assert len(set(first)) == len(first) == 2 * 3 * 2 and first == _ids(_config(pop))  # stable
    digest = load(str(pop)).digest
    group = [g for g in build_plan(_config(pop)).groups if len(g.seats) == 3][0]
    assert group.id_tail.count(f'"population_digest":"{digest}"') == 3  # one per seat

    _write(pop, {**POPULATION, "description": "reworded"})  # no number changed: the same episodes
    assert _ids(_config(pop)) == first

    edited = yaml.safe_load(yaml.safe_dump(POPULATION))
    edited["members"]["b"]["calibration"] = 0.61  # one number of a member
    _write(pop, edited)
    assert load(str(pop)).digest != digest
    assert not set(_ids(_config(pop))) & set(first)


def test_a_team_of_v1_models_keeps_its_ids(tmp_path: Path) -> None:
    pop = tmp_path / "pop.yaml"
    _write(pop, POPULATION)
    raw = _config(pop).model_dump(mode="json")
    raw["agents"] = ["old", "old"]
    before = _ids(validate(raw))
    assert all('"population' not in g.id_tail for g in build_plan(validate(raw)).groups)
    edited = yaml.safe_load(yaml.safe_dump(POPULATION))
    edited["members"]["a"]["spread"] = 2.0
    _write(pop, edited)  # a file the v1 team does not use
    assert _ids(validate(raw)) == before


def test_v1_ids_are_the_recorded_ones() -> None:
    recorded = {r["episode_id"] for r in read_corpus() if r["config"] == "pear" and r["dataset"] == "arith"}
    assert recorded and {t.episode_id for t in build_plan(v1_config("pear", {"arith"})).tasks} == recorded


def test_an_unreadable_population_is_a_config_error_naming_the_model(tmp_path: Path) -> None:
    pop = tmp_path / "pop.yaml"
    _write(pop, POPULATION)
    cfg = _config(pop)  # validated while the file was good; edited before the plan is made
    pop.write_text("version: v2\nmembers: [a, b]\nbenchmarks: {default: {}}\n")
    with pytest.raises(ConfigError) as e:
        build_plan(cfg)
    text = str(e.value)
    assert text.startswith("models.a.args.population: ") and "members" in text and "\n" not in text
    pop.unlink()
    with pytest.raises(ConfigError, match=r"^models\.a\.args\.population: no population '.*pop\.yaml'"):
        build_plan(cfg)


def test_child_runs_name_each_models_population_and_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    from sweep.tracking.tracker import TAG_GROUP, Tracker
    from tests.results_helpers import run_in_process

    monkeypatch.chdir(tmp_path)
    pop = tmp_path / "pop.yaml"
    _write(pop, POPULATION)
    raw = _config(pop).model_dump(mode="json")
    raw["agents"] = ["a", "b", "old"]
    raw["methods"] = ["vote", "cot"]  # vote: one seat per model; cot: the first seat
    raw["output_dir"] = str(tmp_path / "out")
    cfg = validate(raw)
    plan = build_plan(cfg)
    out = run_in_process(cfg)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    Tracker(uri, "populations", out).log_sweep(cfg, plan, ResultStore(out), None)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("populations")
    assert exp is not None
    runs = {r.data.tags.get(TAG_GROUP): r.data.params for r in client.search_runs([exp.experiment_id])}
    digest = load(str(pop)).digest
    for g in plan.groups:
        params = runs[g.key]
        got = {k: v for k, v in params.items() if k.startswith("population")}
        want = {f"population.{m}": "pop" for m in set(g.seats) - {"old"}}
        want |= {f"population_digest.{m}": digest for m in set(g.seats) - {"old"}}
        assert got == want and want, g.run_name
    assert {len(g.seats) for g in plan.groups} == {1, 3}


def _list_rows(capsys: pytest.CaptureFixture[str]) -> dict[str, list[str]]:
    from sweep.cli import main

    assert main(["list", "populations"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
    rows: dict[str, list[str]] = {}
    for line in lines:  # a row whose first cell is empty continues the one above (a wrapped cell)
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0]:
            key, rows[cells[0]] = cells[0], cells[1:]
        else:
            rows[key] = [f"{a} {b}".strip() for a, b in zip(rows[key], cells[1:], strict=True)]
    return rows


def test_list_populations_shows_each_packaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import actors.populations

    assert list(_list_rows(capsys)) == actors.populations.names()  # what ships, v1 first
    monkeypatch.setattr(actors.populations, "HOME", tmp_path)
    _write(tmp_path / "duo.yaml", POPULATION)
    _write(
        tmp_path / "solo.yaml",
        {**POPULATION, "members": {"c": POPULATION["members"]["a"]}, "description": "one"},
    )
    (tmp_path / "broken.yaml").write_text("version: v99\n")
    rows = _list_rows(capsys)
    assert list(rows) == ["v1", "broken", "duo", "solo"]
    assert rows["v1"][:3] == ["v1", "—", "—"] and "the simulated engine's own arguments" in rows["v1"][3]
    assert rows["duo"] == ["v2", "a, b", load(str(tmp_path / "duo.yaml")).digest, POPULATION["description"]]
    assert rows["solo"] == ["v2", "c", load(str(tmp_path / "solo.yaml")).digest, "one"]
    assert rows["duo"][2] != rows["solo"][2]
    assert (
        rows["broken"][0] == "?"
        and rows["broken"][3].startswith("unreadable: ")
        and "version" in rows["broken"][3]
    )
