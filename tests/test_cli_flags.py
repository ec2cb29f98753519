"""The flags people reach for first: --version, `sweep list`, --limit and --dry-run."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from actors.registry import engine_names
from data.benchmarks.registry import CATALOG
from debate.methods import METHODS
from sweep.cli import main
from sweep.config.sweep import load_config
from sweep.run.plan import build_plan
from tests.conftest import ROOT, RayHead, sweep_cmd

SIMULATED = str(ROOT / "examples" / "simulated.yaml")


def test_version_names_the_package_and_its_engines(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    printed = capsys.readouterr().out
    assert f"sweep {version('debate-sweep')}" in printed
    assert f"ray {version('ray')}" in printed and f"mlflow {version('mlflow')}" in printed


@pytest.mark.parametrize(
    ("what", "names"),
    [("benchmarks", sorted(CATALOG)), ("methods", sorted(METHODS)), ("engines", engine_names())],
)
def test_list_shows_every_registered_name(
    what: str, names: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", what]) == 0
    rows = {
        line.split("│")[1].strip() for line in capsys.readouterr().out.splitlines() if line.startswith("│")
    }
    assert set(names) <= rows and len(names) >= 4


def test_list_shows_defaults_from_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    main(["list", "methods"])
    assert "selection_temperature=0.7" in capsys.readouterr().out  # PEAR's default, from its dataclass
    main(["list", "engines"])
    assert "skill=0.6" in capsys.readouterr().out  # the simulated engine's signature


def test_limit_caps_every_dataset_and_keeps_a_smaller_limit(tmp_path: Path) -> None:
    cfg = load_config(SIMULATED, ["datasets.0.limit=40"], str(tmp_path / "out"))
    from sweep.run.cli import with_limit

    assert [d.limit for d in with_limit(cfg, 3).datasets] == [3]
    assert [d.limit for d in with_limit(cfg, 100).datasets] == [40]
    assert len(build_plan(with_limit(cfg, 3)).tasks) == 5 * 3 * 2  # methods x items x seeds


@pytest.mark.parametrize("bad", ["0", "-2", "2.5", "many"])
def test_a_bad_limit_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["plan", SIMULATED, "--limit", bad])
    assert exit_.value.code == 2
    assert "--limit" in capsys.readouterr().err


def test_dry_run_counts_what_is_stored_and_writes_nothing(tmp_path: Path, ray_head: RayHead) -> None:
    out = tmp_path / "out"
    dry = subprocess.run(
        sweep_cmd("run", SIMULATED, "--out", str(out), "--limit", "3", "--dry-run"),
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "30 episodes planned, 0 already stored" in dry.stdout and "30 to run" in dry.stdout
    assert not out.exists()  # no dir, no lock, no config copy
    real = subprocess.run(
        sweep_cmd("run", SIMULATED, "--out", str(out), "--limit", "2", "--no-tracking", "--address", ray_head.address),
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert real.returncode == 0, real.stderr[-2000:]
    before = sorted(p.name for p in out.rglob("*"))
    dry = subprocess.run(
        sweep_cmd("run", SIMULATED, "--out", str(out), "--limit", "3", "--dry-run"),
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "30 episodes planned, 20 already stored" in dry.stdout and "10 to run" in dry.stdout, dry.stdout
    assert sorted(p.name for p in out.rglob("*")) == before


def test_ray_token_notice_is_dropped_and_other_ray_warnings_kept(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from sweep.engines.ray_runtime import _quiet_token_notice

    _quiet_token_notice()
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    with caplog.at_level(logging.WARNING, logger=log.name):
        log.warning(
            "Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out."
        )
        log.warning("Token authentication is disabled for this Ray cluster. Anyone with network access ...")
    assert [r.getMessage()[:40] for r in caplog.records] == ["Token authentication is disabled for thi"]


def test_sweep_run_needs_no_optuna() -> None:
    """`.venv-vllm` has no optuna (nor should a cluster's workers need it): `sweep run` must not
    import it. A module-level optuna import anywhere on `sweep.cli`'s path fails this."""
    code = (
        "import sys; sys.modules['optuna'] = None\n"
        "from sweep.cli import main\n"
        f"sys.exit(main(['run', {SIMULATED!r}, '--limit', '1', '--dry-run']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dry run: 10 episodes planned" in proc.stdout


@pytest.mark.parametrize(
    "argv", [["--version"], ["list", "methods"], ["validate", SIMULATED], ["plan", SIMULATED]]
)
def test_quick_commands_import_no_framework(argv: list[str]) -> None:
    """The commands a user types first answer without loading Ray, MLflow, Optuna or torch (each
    costs seconds on a busy machine); bench/cli_latency.py times them."""
    code = (
        "import sys\nfrom sweep.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('ray', 'mlflow', 'optuna', 'torch', 'llama_cpp') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
