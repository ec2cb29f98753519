"""Policy checkpoints named by MLflow URIs: `runs:/<run id>/<artifact path>` (the path defaults to
`policy.npz`, the final policy `sweep train` logs) may stand wherever a checkpoint path may, e.g.
`{name: rumad, args: {checkpoint: "runs:/<run id>/policy.npz"}}`. The run is looked up in the tracking
store that `MLFLOW_TRACKING_URI` names (the training's, e.g. `sqlite:///runs/train/mlflow.db`); the
file is downloaded once into `$DEBATE_SWEEP_CACHE` (default `~/.cache/debate-sweep`) and read from
there afterwards — a run's artifacts do not change. Importing `sweep` registers the resolver."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from debate.policies.checkpoint import RESOLVERS, CheckpointError


def cache_root() -> Path:
    return Path(os.environ.get("DEBATE_SWEEP_CACHE", Path.home() / ".cache" / "debate-sweep")) / "checkpoints"


def from_mlflow(ref: str) -> Path:
    """The local copy of the artifact `ref` (`runs:/<run id>[/<path>]`) names."""
    run_id, _, artifact = ref.removeprefix("runs:/").strip("/").partition("/")
    artifact = artifact or "policy.npz"
    if not run_id or ".." in Path(artifact).parts:
        raise CheckpointError(f"checkpoint '{ref}': expected runs:/<run id>/<artifact path>")
    dest = cache_root() / run_id / artifact
    if dest.is_file():
        return dest
    import mlflow

    uri = os.environ.get("MLFLOW_TRACKING_URI")
    with tempfile.TemporaryDirectory(prefix="debate-sweep-ckpt-") as tmp:
        try:
            local = mlflow.artifacts.download_artifacts(
                run_id=run_id, artifact_path=artifact, dst_path=tmp, tracking_uri=uri
            )
        except Exception as e:  # noqa: BLE001 - MLflow's errors vary by store; one line is the point
            where = uri or "the default tracking store"
            raise CheckpointError(
                f"checkpoint '{ref}': not found in {where} ({type(e).__name__}); set MLFLOW_TRACKING_URI "
                "to the training's store, e.g. sqlite:///runs/train_rumad_simulated/mlflow.db"
            ) from None
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, dest.with_name(f".{dest.name}.tmp"))
        dest.with_name(f".{dest.name}.tmp").replace(dest)
    return dest


RESOLVERS["runs"] = from_mlflow
