"""Logging a written report as artifacts (`report/…`: the HTML, its plots and tables) of the MLflow
parent run of every sweep whose episodes it covers. MLflow is imported only here, and only when a
tracking store exists: a report never creates one."""

from __future__ import annotations

from pathlib import Path

import yaml


def _tracking(out: Path, uri: str | None) -> tuple[str | None, str]:
    """The tracking URI (None: no store to log to) and experiment of the sweep in `out`: the sweep's
    own choice, read back from its resolved config (`--tracking-uri` logs even where it was off)."""
    from sweep.tracking.choice import DEFAULT_EXPERIMENT, choose_tracking

    tracking: dict = {}
    try:
        cfg = yaml.safe_load((out / "config.resolved.yaml").read_text(encoding="utf-8")) or {}
        tracking = dict(cfg.get("tracking") or {})
    except (OSError, yaml.YAMLError, AttributeError, TypeError, ValueError):
        pass
    enabled = tracking.get("enabled") is not False or uri is not None
    experiment = str(tracking.get("experiment") or DEFAULT_EXPERIMENT)
    choice = choose_tracking(out, enabled, tracking.get("uri"), experiment, flag_uri=uri)
    if choice.uri is None or (
        choice.uri.startswith("sqlite:///") and not Path(choice.uri.removeprefix("sqlite:///")).is_file()
    ):
        return None, experiment  # a report never creates a store
    return choice.uri, experiment


def log_report(out: Path, sweep_ids: list[str], report_dir: Path, uri: str | None = None) -> list[str]:
    """Log `report_dir` under `report/` of each sweep's parent run; one line per run logged, or why
    nothing was logged."""
    tracking_uri, experiment = _tracking(out, uri)
    if tracking_uri is None:
        return [f"mlflow: no tracking store for {out}; report not logged"]
    from mlflow import MlflowClient

    from sweep.tracking.tracker import TAG_ROLE, TAG_SWEEP_ID, _runs

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return [f"mlflow: no experiment {experiment!r} at {tracking_uri}; report not logged"]
    lines = []
    for sweep_id in sweep_ids:
        if not sweep_id.isalnum():  # ids are hex digests; anything else must not reach a filter string
            lines.append(f"mlflow: skipped sweep id {sweep_id!r} (not a sweep id)")
            continue
        query = f"tags.`{TAG_SWEEP_ID}` = '{sweep_id}' and tags.`{TAG_ROLE}` = 'sweep'"
        runs = sorted(_runs(client, exp.experiment_id, query), key=lambda r: r.info.start_time)
        if not runs:
            lines.append(f"mlflow: no parent run for sweep {sweep_id}; report not logged for it")
            continue
        client.log_artifacts(runs[0].info.run_id, str(report_dir), "report")
        lines.append(f"mlflow: report logged to run {runs[0].info.run_id} (sweep {sweep_id}) under report/")
    return lines
