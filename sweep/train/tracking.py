"""A training in MLflow: one run per training (found again on resume by a tag naming its config and
output dir), the training config as params, every update's metrics with the update as step (every
reward term, return, accuracy, tokens, activations against the budget, entropy, approx-KL, clip
fraction, losses), the kept checkpoints under `checkpoints/`, the final policy as `policy.npz` and the
training curves as `plots/training_curves.png`. The final policy of run R is `runs:/R/policy.npz`,
the best evaluated one `runs:/R/best.npz`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from mlflow.entities import Metric, Param

from debate.spec import stable_hash
from sweep.tracking.tracker import TAG_ROLE, Tracker, _runs, flatten_params, log_batch
from sweep.train.config import TrainSetup

TAG_TRAINING = "debate_sweep.training"
CURVES = (
    "return",
    "accuracy",
    "eval.accuracy",
    "tokens_per_task",
    "activations",
    "eval.activations",
    "approx_kl",
)


def plot_curves(history: Sequence[dict[str, float]], path: Path, title: str = "") -> Path:
    """A PNG of the training curves (one panel per metric of `CURVES` present, by update)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in CURVES if any(k in h for h in history)]
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 2.8), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        points = [(h["update"], h[key]) for h in history if key in h]
        ax.plot([p[0] for p in points], [p[1] for p in points], lw=1.2)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("update", fontsize=8)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class TrainTracker:
    """Logs one training through `MlflowClient`; a resumed training logs into the same run."""

    def __init__(self, uri: str, setup: TrainSetup) -> None:
        self.uri = uri
        self._t = Tracker(uri, setup.cfg.tracking.experiment, setup.out)
        self.client = self._t.client
        key = stable_hash([setup.fingerprint(), str(setup.out)])
        found = list(_runs(self.client, self._t.experiment_id, f"tags.`{TAG_TRAINING}` = '{key}'"))
        if found:
            self.run_id = min(found, key=lambda r: r.info.start_time).info.run_id
            self.client.update_run(self.run_id, status="RUNNING")
        else:
            tags = {TAG_ROLE: "training", TAG_TRAINING: key}
            run = self.client.create_run(self._t.experiment_id, tags=tags, run_name=setup.cfg.name)
            self.run_id = run.info.run_id
            params = flatten_params(setup.cfg.model_dump(mode="json", exclude={"tracking"}))
            params |= flatten_params({"fingerprint": setup.fingerprint(), "rounds": setup.base.rounds})
            log_batch(self.client, self.run_id, [], [Param(k, v) for k, v in params.items()], [])

    def log_updates(self, history: Sequence[dict[str, float]]) -> None:
        """Every metric of the given updates, at step = update."""
        now = int(time.time() * 1000)
        metrics = [
            Metric(k, float(v), now, int(h["update"])) for h in history for k, v in h.items() if k != "update"
        ]
        if metrics:
            log_batch(self.client, self.run_id, metrics, [], [])

    def sync(self, history: Sequence[dict[str, float]]) -> int:
        """Log the recorded updates MLflow lacks (a training killed between recording and logging);
        returns how many."""
        logged = {m.step for m in self.client.get_metric_history(self.run_id, "return")}
        missing = [h for h in history if int(h["update"]) not in logged]
        self.log_updates(missing)
        return len(missing)

    def log_checkpoint(self, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path), "checkpoints")

    def finish(
        self, final: Path | None, curves: Path | None, status: str = "FINISHED", extra: Sequence[Path] = ()
    ) -> None:
        for path in [final, *extra] if final is not None else extra:
            self.client.log_artifact(self.run_id, str(path))
        if curves is not None:
            self.client.log_artifact(self.run_id, str(curves), "plots")
        self.client.set_terminated(self.run_id, status)


class NullTrainTracker:
    """Tracking off: the calls of `TrainTracker`, logging nothing."""

    uri: str | None = None
    run_id: str | None = None

    def log_updates(self, history: Sequence[dict[str, float]]) -> None:
        return None

    def sync(self, history: Sequence[dict[str, float]]) -> int:
        return 0

    def log_checkpoint(self, path: Path) -> None:
        return None

    def finish(
        self, final: Path | None, curves: Path | None, status: str = "FINISHED", extra: Sequence[Path] = ()
    ) -> None:
        return None
