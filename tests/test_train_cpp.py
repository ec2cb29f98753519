"""`sweep train` with CPP's policy gradient: the config selects the algorithm and refuses what does not
belong, behaviour embeddings come from the seats' validation replies, the two-stage k schedule and the
entropy decay, a training killed mid-way resumes to the same weights, MLflow gets one run, the checkpoint
drives `sweep run`, and RUMAD's fingerprints are what they were before CPP's sections existed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from debate.policies import checkpoint as ckpt
from debate.policies.pruning import PruningArch
from sweep.config.sweep import ConfigError
from sweep.engines.pool import local_agents
from sweep.train import pg
from sweep.train.config import TrainSetup, load_train

BASE: dict[str, Any] = {
    "models": {
        "strong": {
            "engine": "simulated",
            "args": {"skill": 0.8, "verbosity": 4},
            "price_in": 2.0,
            "price_out": 8.0,
        },
        "cheap": {
            "engine": "simulated",
            "args": {"skill": 0.4, "verbosity": 8},
            "price_in": 0.1,
            "price_out": 0.4,
        },
    },
    "agents": [{"model": "strong"}, {"model": "cheap", "count": 2}],
    "datasets": [{"name": "arith", "split": "train", "limit": 12}],
    "methods": ["cot"],
    "rounds": 2,
    "concurrency": 8,
    "cache": False,
}
TRAIN: dict[str, Any] = {
    "name": "t",
    "sweep": "base.yaml",
    "method": {"name": "cpp"},
    "cpp": {"hidden": 16, "behaviour_items": 3, "behaviour_offset": 100},
    "pg": {"updates": 3, "episodes_per_update": 6, "seed": 0, "first_stage_updates": 1, "first_stage_k": 1.0},
    "reward": {"k": -0.5},
    "checkpoint_every": 2,
    "eval_every": 2,
    "eval_episodes": 4,
    "tracking": {"enabled": False},
}


def write(tmp: Path, **train_cfg: Any) -> Path:
    (tmp / "base.yaml").write_text(yaml.safe_dump(BASE))
    (tmp / "train.yaml").write_text(yaml.safe_dump({**TRAIN, "output_dir": str(tmp / "out"), **train_cfg}))
    return tmp / "train.yaml"


def agents_for(setup: TrainSetup) -> dict[str, Any]:
    return local_agents(setup.base)


def run(path: Path, *sets: str, **kw: Any) -> Any:
    setup = load_train(path, list(sets))
    return pg.train(setup, agents_for(setup), **kw)


@pytest.mark.parametrize(
    "sets, message",
    [
        (["algorithm=ppo"], "does not train cpp"),
        (["reward.alpha_accuracy=1"], "unknown reward weight 'alpha_accuracy'"),
        (["reward.k=2"], "k must be in"),
        (["reward.gama=0.5"], "did you mean 'gamma'"),
        (["cpp.encoder=word2vec"], "unknown encoder"),
        (["pg.entropy_decay=0"], "pg.entropy_decay"),
        (["pg.lrr=1"], "did you mean 'lr'"),
        (["pg.epochs=4"], "pg.clip: epochs or minibatches > 1 reuse samples off-policy; set pg.clip"),
        (["pg.minibatches=2", "pg.clip=0"], "pg.clip: epochs or minibatches > 1"),
        (["pg.clip=-0.1"], "pg.clip"),
        (["pg.epochs=0", "pg.clip=0.2"], "pg.epochs"),
        (["method.args.author_tag=2"], "author_tag must be true, false or null"),
        (["pg.group_size=4"], r"pg.group_size: 4 does not divide pg.episodes_per_update \(6\)"),
        (["pg.group_size=0"], "pg.group_size"),
    ],
)
def test_bad_cpp_training_configs_are_one_line_errors(tmp_path: Path, sets: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_train(write(tmp_path), sets)


def test_rumad_fingerprints_ignore_cpps_sections(tmp_path: Path) -> None:
    rumad = {"method": {"name": "rumad", "args": {"budget": 3}}, "policy": {"hidden": 16}, "reward": {}}
    a = load_train(write(tmp_path, **rumad))
    b = load_train(write(tmp_path, **rumad), ["pg.lr=0.5", "cpp.hidden=3"])
    assert a.algorithm == "ppo" and a.fingerprint() == b.fingerprint()
    c = load_train(write(tmp_path))
    assert c.algorithm == "pg" and c.fingerprint() != load_train(write(tmp_path), ["pg.lr=0.5"]).fingerprint()
    assert c.fingerprint() == load_train(write(tmp_path), ["pg.updates=9", "ppo.lr=0.5"]).fingerprint()


def test_cpps_rollouts_follow_pg_seed_which_a_resume_must_match(tmp_path: Path) -> None:
    """CPP's episodes draw their engine seeds from `pg.seed` (in its fingerprint), not from RUMAD's
    `ppo.seed` (outside it): a resume that changes the seed behind the rollouts is refused, and a
    change the fingerprint ignores leaves every rollout seed as it was."""
    from sweep.train.rollouts import rollout_tasks, training_items

    def seeds(setup: TrainSetup) -> list[int]:
        items = training_items(setup)
        tasks = rollout_tasks(setup, items, setup.method.router, 1, 4, np.random.default_rng(0))  # type: ignore[arg-type]
        return [t.group.seed for t in tasks]

    base = load_train(write(tmp_path))
    ppo, other = load_train(write(tmp_path), ["ppo.seed=7"]), load_train(write(tmp_path), ["pg.seed=7"])
    assert base.fingerprint() == ppo.fingerprint() and seeds(base) == seeds(ppo)
    assert base.fingerprint() != other.fingerprint() and seeds(base) != seeds(other)
    # sweep.train.state.restore refuses a state whose fingerprint differs (tests/test_train_state.py)


def test_a_training_runs_the_schedule_and_keeps_the_validation_statistics(tmp_path: Path) -> None:
    out = run(write(tmp_path))
    h = out.history
    assert [x["k"] for x in h] == [1.0, -0.5, -0.5]  # the two-stage schedule
    assert h[1]["entropy_coef"] == pytest.approx(0.01 * 0.97)
    assert "eval.accuracy" in h[1] and "eval.accuracy" not in h[0]
    loaded = ckpt.load(str(out.policy))
    arch = PruningArch.from_dict(loaded.arch)
    assert arch.seat_models == ("strong", "cheap", "cheap") and [len(x) for x in arch.output_lengths] == [
        3,
        3,
        3,
    ]
    assert min(arch.output_lengths[1]) > max(arch.output_lengths[0]) / 4  # verbose seats write more
    assert loaded.weights["behaviour"].shape == (3, 384)
    assert (tmp_path / "out" / "checkpoints" / "best.npz").is_file()


def test_behaviour_embeddings_start_from_the_encoded_validation_replies(tmp_path: Path) -> None:
    setup = load_train(write(tmp_path))
    import asyncio

    from sweep.train.behaviour import behaviour

    emb, lengths = asyncio.run(behaviour(setup, agents_for(setup)))
    again, _ = asyncio.run(behaviour(setup, agents_for(setup)))
    assert np.array_equal(emb, again) and emb.shape == (3, 384)
    assert not np.allclose(emb[0], emb[1])  # seats reply differently
    net = pg.build(PruningArch(3, hidden=16), 0, emb)
    assert torch.equal(net.behaviour.detach(), torch.from_numpy(emb))


def test_a_killed_training_resumes_to_the_same_weights(tmp_path: Path) -> None:
    path = write(tmp_path)
    whole = run(path, f"output_dir={tmp_path / 'whole'}")

    class Kill(Exception):
        pass

    def stop(history: list[dict[str, float]]) -> bool:
        if len(history) == 2:
            raise Kill  # dies after recording update 2, like a SIGKILL between updates
        return False

    with pytest.raises(Kill):
        run(path, f"output_dir={tmp_path / 'cut'}", on_update=stop)
    resumed = run(path, f"output_dir={tmp_path / 'cut'}")
    assert resumed.resumed_from == 2
    a, b = ckpt.load(str(whole.policy)).weights, ckpt.load(str(resumed.policy)).weights
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    strip = lambda hs: [{k: v for k, v in x.items() if k != "seconds"} for x in hs]  # noqa: E731
    assert strip(whole.history) == strip(resumed.history)


def test_returns_of_the_batch_are_the_trajectorys(tmp_path: Path) -> None:
    setup = load_train(write(tmp_path))
    agents = agents_for(setup)
    import asyncio

    from debate.cpp_reward import returns
    from sweep.train.rollouts import rollout_tasks, run_rollouts, training_items

    arch = PruningArch(3, hidden=16)
    router = pg.CppPolicyRouter(setup.method.router, pg.Pruner(pg.build(arch, 0), "t"), sample=True)  # type: ignore[arg-type]
    tasks = rollout_tasks(setup, training_items(setup), router, 1, 3, np.random.default_rng(0))  # type: ignore[arg-type]
    results = asyncio.run(run_rollouts(tasks, agents, 4))
    batch = pg.collect(results, setup.rewards)
    want = np.concatenate([returns(r.trajectory, setup.rewards)[1] for r in results])
    np.testing.assert_allclose(batch.returns.numpy(), want, rtol=1e-6)
    assert batch.kept.shape == (3 * 2 * 9,) and batch.queries.shape == (3 * 2 * 9, 384)
    flipped = pg.collect(results, dataclasses.replace(setup.rewards, k=1.0))
    assert not torch.equal(flipped.returns, batch.returns)  # k reaches the returns


def test_a_group_runs_each_item_several_times_and_marks_its_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from sweep.train.rollouts import rollout_tasks, run_rollouts, training_items

    plain = load_train(write(tmp_path))
    assert plain.fingerprint() == load_train(write(tmp_path), ["pg.group_size=1"]).fingerprint()
    setup = load_train(write(tmp_path), ["pg.group_size=2"])
    assert setup.fingerprint() != plain.fingerprint()
    arch = PruningArch(3, hidden=16)
    router = pg.CppPolicyRouter(setup.method.router, pg.Pruner(pg.build(arch, 0), "t"), sample=True)  # type: ignore[arg-type]
    tasks = rollout_tasks(setup, training_items(setup), router, 1, 4, np.random.default_rng(0), 2)  # type: ignore[arg-type]
    assert [t.sample.id for t in tasks[::2]] == [t.sample.id for t in tasks[1::2]]
    kept: list[int] = []
    results = asyncio.run(run_rollouts(tasks, agents_for(setup), 4, kept=kept))
    batch = pg.collect(results, setup.rewards, None, np.asarray(kept) // 2)
    assert batch.items is not None and batch.items.tolist() == [0] * 36 + [1] * 36  # 2 episodes x 2 x 9
    # the training draws episodes_per_update / group_size items, each run group_size times
    seen: list[Any] = []
    collect = pg.collect
    monkeypatch.setattr(pg, "collect", lambda *a: seen.append(a[3:]) or collect(*a))
    out = run(write(tmp_path), "pg.updates=1", "pg.group_size=2", f"output_dir={tmp_path / 'g'}")
    assert out.history[0]["episodes"] == 6 and seen[0][0].tolist() == [0, 0, 1, 1, 2, 2]


def test_action_states_score_the_batch_only_when_asked(tmp_path: Path) -> None:
    import asyncio

    from debate.action_states import action_correctness
    from debate.cpp_reward import returns
    from sweep.train.rollouts import rollout_tasks, run_rollouts, training_items

    plain = load_train(write(tmp_path))
    setup = load_train(write(tmp_path), ["pg.action_states=true"])
    # off is the old behaviour: the fingerprints of trainings made before the key stay as they were
    assert plain.fingerprint() == load_train(write(tmp_path), ["pg.action_states=false"]).fingerprint()
    assert setup.fingerprint() != plain.fingerprint()
    agents = agents_for(setup)
    arch = PruningArch(3, hidden=16)
    router = pg.CppPolicyRouter(setup.method.router, pg.Pruner(pg.build(arch, 0), "t"), sample=True)  # type: ignore[arg-type]
    tasks = rollout_tasks(setup, training_items(setup), router, 1, 4, np.random.default_rng(0))  # type: ignore[arg-type]
    kept: list[int] = []
    results = asyncio.run(run_rollouts(tasks, agents, 4, kept=kept))
    assert asyncio.run(pg.action_states(plain, tasks, results, agents)) is None
    states = asyncio.run(pg.action_states(setup, [tasks[j] for j in kept], results, agents))
    assert states is not None and len(states) == len(results)
    for task, res, got in zip([tasks[j] for j in kept], results, states, strict=True):
        g = task.group
        team = g.team(agents)
        want = asyncio.run(
            action_correctness(g.method, team, task.sample, pg.grader_for(task.sample), g.seed, "arith", res)
        )
        assert np.array_equal(got, want)
    batch = pg.collect(results, setup.rewards, states)
    want = np.concatenate(
        [returns(r.trajectory, setup.rewards, s)[1] for r, s in zip(results, states, strict=True)]
    )
    np.testing.assert_allclose(batch.returns.numpy(), want, rtol=1e-6)
    assert not torch.equal(batch.returns, pg.collect(results, setup.rewards).returns)
    # the training itself: the same first rollouts, scored on each action's own pair
    a = run(write(tmp_path), "pg.updates=1", f"output_dir={tmp_path / 'a'}").history[0]
    b = run(write(tmp_path), "pg.updates=1", "pg.action_states=true", f"output_dir={tmp_path / 'b'}").history[
        0
    ]
    assert (
        a["accuracy"] == b["accuracy"] and a["kept_edges"] == b["kept_edges"] and a["return"] != b["return"]
    )
    # what the probes cost is logged beside the episodes' own figures, which it does not enter
    assert "probe_calls_per_task" not in a and b["probe_calls_per_task"] == 2 * 3 * 2  # rounds x n x (n - 1)
    assert b["probe_tokens_per_task"] > 0 and a["tokens_per_task"] == b["tokens_per_task"]


@pytest.mark.ray
@pytest.mark.slow
def test_sweep_train_on_ray_logs_one_mlflow_run_and_sweep_run_evaluates_the_policy(
    tmp_path: Path, ray_driver: Any
) -> None:
    from sweep.cli import main

    path = write(tmp_path, tracking={"enabled": True})
    assert main(["train", str(path), "--address", ray_driver.address]) == 0
    import mlflow

    runs = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}").search_runs(
        [
            mlflow.MlflowClient(f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
            .get_experiment_by_name("debate-sweep-training")
            .experiment_id
        ]
    )
    assert len(runs) == 1 and {"kept_edges", "k", "entropy_coef", "eval.accuracy"} <= set(
        runs[0].data.metrics
    )
    sweep = {**BASE, "datasets": [{"name": "arith", "split": "test", "limit": 3}], "output_dir": str(tmp_path / "eval"),
             "methods": [{"name": "cpp", "args": {"checkpoint": str(tmp_path / "out" / "policy.npz"), "truncate": 0.9}}]}  # fmt: skip
    (tmp_path / "eval.yaml").write_text(yaml.safe_dump(sweep))
    assert main(["run", str(tmp_path / "eval.yaml"), "--no-tracking", "--address", ray_driver.address]) == 0
    import polars as pl

    rounds = pl.read_parquet(tmp_path / "eval" / "rounds" / "*.parquet")
    assert rounds.filter(pl.col("round") == 0)["max_tokens"].to_list()[0] is not None  # round 0 truncated
    assert rounds.filter(pl.col("round") == 2)["max_tokens"].to_list()[0] is None  # the last round never


def test_training_learns_what_its_reward_asks(tmp_path: Path) -> None:
    """k = -1 punishes keeping a response an agent needed no help with: the keep rate must fall."""
    sets = [
        "reward.k=-1",
        "pg.first_stage_updates=0",
        "pg.updates=12",
        "pg.episodes_per_update=8",
        "pg.lr=3e-3",
        "eval_every=0",
    ]
    h = run(write(tmp_path), *sets).history
    first, last = np.mean([x["keep_rate"] for x in h[:3]]), np.mean([x["keep_rate"] for x in h[-3:]])
    assert last < first - 0.1, (first, last)


def test_encoder_auto_is_minilm_where_installed_else_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweep.train import pg_config
    from sweep.train.pg_config import CppPolicyConfig

    for installed, want in ((True, "minilm"), (False, "hashed")):
        monkeypatch.setattr(pg_config, "minilm_installed", lambda i=installed: i)
        setup = load_train(write(tmp_path), ["cpp.encoder=auto"])
        assert setup.section("cpp", CppPolicyConfig).encoder == want
        # the fingerprint names the encoder resolved, not "auto": each install's training is its own
        assert setup.fingerprint() == load_train(write(tmp_path), [f"cpp.encoder={want}"]).fingerprint()


def test_the_main_methods_training_reads_no_seat_and_takes_several_clipped_steps(tmp_path: Path) -> None:
    """author_tag false reaches the behaviour embeddings, the rollouts and the checkpoint; epochs x
    minibatches clipped steps run per update."""
    from debate.encoders import set_provider
    from tests.test_cpp_router import Spy

    spy = Spy()
    previous = set_provider(lambda name: spy)
    try:
        sets = ["pg.updates=2", "pg.epochs=2", "pg.minibatches=3", "pg.clip=0.2", "eval_every=0"]
        out = run(write(tmp_path, method={"name": "cpp", "args": {"author_tag": False}}), *sets)
    finally:
        set_provider(previous)
    responses = [t for t in spy.texts if t.startswith(("Answer: ", "Agent "))]
    assert responses and not any(t.startswith("Agent ") for t in responses)
    assert all(h["steps"] == 6 and "approx_kl" in h for h in out.history)
    assert PruningArch.from_dict(ckpt.load(str(out.policy)).arch).author_tag is False
