"""Predicted against published: every row of a targets file run on a population (and on v1 beside
it), written as `predictions.csv` and `calibration.md` (`sweep report`'s markdown), and logged to
MLflow as one run.

Judged per row: the absolute error in points and whether it lies within the paper's std (2 points
where the paper gives none); per split: the mean absolute error and the share within std; for the
predict rows also Spearman's rho between published and predicted accuracy (the method ranking), per
dataset and pooled over all predict rows."""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sweep.calibrate.evaluate import RowResult
from sweep.calibrate.targets import Row, Targets
from sweep.report.layout import TextTable
from sweep.report.sections import Section, markdown, md_text
from sweep.store.targets import replace_file

COLUMNS: tuple[str, ...] = (
    "label",
    "dataset",
    "split",
    "published_acc",
    "published_std",
    "predicted_acc",
    "predicted_std",
)
COLUMNS += ("abs_error", "within_std", "published_cost", "predicted_cost", "v1_predicted_acc", "v1_abs_error")
COLUMNS += ("published_tokens", "predicted_tokens")
NO_STD = 2.0  # points: the tolerance of a row whose paper gives no std


def ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks of `values`, ties sharing the average of the ranks they span."""
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="mergesort")
    out = np.empty(len(x))
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        out[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson's r of the average ranks); None with fewer than two pairs or when
    either side is constant (no ranking to compare)."""
    if len(a) != len(b):
        raise ValueError("spearman: the two sides differ in length")
    if len(a) < 2:
        return None
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def within(error: float, std: float | None) -> bool:
    return error <= (std if std is not None else NO_STD)


@dataclass(frozen=True)
class Record:
    """One row of `predictions.csv`."""

    row: Row
    pred: RowResult
    v1: RowResult | None

    @property
    def error(self) -> float:
        return abs(self.pred.acc - self.row.acc)

    def csv(self) -> dict[str, Any]:
        r, p = self.row, self.pred
        return {
            "label": r.label,
            "dataset": r.dataset,
            "split": r.split,
            "published_acc": r.acc,
            "published_std": r.std,
            "predicted_acc": round(p.acc, 3),
            "predicted_std": None if p.std is None else round(p.std, 3),
            "abs_error": round(self.error, 3),
            "within_std": within(self.error, r.std),
            "published_cost": r.cost,
            "predicted_cost": None if p.cost_pct is None else round(p.cost_pct, 2),
            "v1_predicted_acc": None if self.v1 is None else round(self.v1.acc, 3),
            "v1_abs_error": None if self.v1 is None else round(abs(self.v1.acc - r.acc), 3),
            "published_tokens": r.tokens,
            "predicted_tokens": round(p.tokens / 1000, 3),
        }


def records(
    rows: Sequence[Row], pred: Mapping[str, RowResult], v1: Mapping[str, RowResult] | None
) -> list[Record]:
    return [Record(r, pred[r.key], None if v1 is None else v1[r.key]) for r in rows]


def csv_text(recs: Sequence[Record]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for rec in recs:
        writer.writerow({k: "" if v is None else v for k, v in rec.csv().items()})
    return buf.getvalue()


def _mae(errors: Sequence[float]) -> float | None:
    return statistics.fmean(errors) if errors else None


def scores(recs: Sequence[Record], v1: bool = False) -> dict[str, float]:
    """The summary metrics of the population's predictions (`v1`: of v1's, the same names prefixed
    `v1_`); a metric with nothing to compute on is left out."""
    if v1:
        recs = [Record(r.row, r.v1, None) for r in recs if r.v1 is not None]
    out: dict[str, float | None] = {}
    for split in ("fit", "predict"):
        mine = [r for r in recs if r.row.split == split]
        out[f"{split}_mae"] = _mae([r.error for r in mine])
        out[f"{split}_within_std"] = _mae([float(within(r.error, r.row.std)) for r in mine])
    held = [r for r in recs if r.row.split == "predict"]
    out["predict_spearman"] = spearman([r.row.acc for r in held], [r.pred.acc for r in held])
    for ds in dict.fromkeys(r.row.dataset for r in held):
        on = [r for r in held if r.row.dataset == ds]
        out[f"predict_spearman.{ds}"] = spearman([r.row.acc for r in on], [r.pred.acc for r in on])
    prefix = "v1_" if v1 else ""
    return {prefix + k: v for k, v in out.items() if v is not None and math.isfinite(v)}


def _num(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _pm(mean: float | None, std: float | None) -> str:
    return _num(mean) if std is None else f"{_num(mean)} ± {_num(std)}"


def _dataset_section(targets: Targets, key: str, recs: Sequence[Record], has_v1: bool) -> Section:
    cols = ["method", "split", "published", "predicted", "abs error", "within std", "cost published (%)"]
    cols += ["cost predicted (%)"] + (["v1", "v1 abs error"] if has_v1 else [])
    rows = []
    for rec in recs:
        c = rec.csv()
        cells = [rec.row.label, rec.row.split, _pm(rec.row.acc, rec.row.std), _pm(rec.pred.acc, rec.pred.std)]
        cells += [_num(rec.error), "yes" if c["within_std"] else "no", _num(rec.row.cost)]
        cells += [_num(c["predicted_cost"])]
        if has_v1:
            cells += [_num(c["v1_predicted_acc"]), _num(c["v1_abs_error"])]
        rows.append(cells)
    entry = targets.datasets[key]
    where = ", ".join(dict.fromkeys(r.row.where for r in recs if r.row.where))
    text = md_text(
        f"{entry.get('name')}/{entry.get('split', 'test')}; accuracy in percent; published from {where}"
    )
    return Section(key, text, [TextTable("", cols, rows)])


def _field(item: Any, name: str) -> str:
    value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
    return "" if value is None else str(value)


def calibration_md(
    targets: Targets, population: str, recs: Sequence[Record], skipped: Sequence[Row], how: str
) -> str:
    """The whole `calibration.md`: a table per dataset, the summary, the rows not run."""
    has_v1 = any(r.v1 is not None for r in recs)
    secs = [
        _dataset_section(targets, ds, [r for r in recs if r.row.dataset == ds], has_v1)
        for ds in dict.fromkeys(r.row.dataset for r in recs)
    ]
    mine, old = scores(recs), scores(recs, v1=True)
    names = ["fit_mae", "fit_within_std", "predict_mae", "predict_within_std", "predict_spearman"]
    names += sorted(k for k in mine if k.startswith("predict_spearman."))
    table = [[n, _num(mine.get(n), 3)] + ([_num(old.get("v1_" + n), 3)] if has_v1 else []) for n in names]
    cols = ["metric", population] + (["v1"] if has_v1 else [])
    summary = (
        "Mean absolute error (points) and the share of rows within the paper's std (2 points where it "
        "gives none), per split; Spearman's rho of published against predicted accuracy over the predict "
        "rows, per dataset and pooled over all datasets."
    )
    secs.append(Section("Summary", summary, [TextTable("", cols, table)]))
    gone = [[_field(u, "label"), _field(u, "where"), _field(u, "reason")] for u in targets.unavailable]
    gone += [[r.label, r.where, "needs a checkpoint: pass --checkpoint LABEL=PATH"] for r in skipped]
    if gone:
        secs.append(
            Section(
                "Not run",
                "Rows of the tables this run did not predict.",
                [TextTable("", ["row", "where", "why"], gone)],
            )
        )
    header = (
        f"# Calibration: {md_text(population)}\n\n{md_text(str(targets.paper))}\n\n"
        f"{md_text(f'Targets {targets.path} (digest {targets.digest}); {how}.')}"
    )
    return markdown(header, secs)


def write_outputs(out: Path, csv_body: str, md_body: str) -> list[Path]:
    """`predictions.csv` and `calibration.md` in `out`, each replaced whole; returns their paths."""
    paths = [out / "predictions.csv", out / "calibration.md"]
    for path, body in zip(paths, (csv_body, md_body), strict=True):
        replace_file(path, body.encode("utf-8"))
    return paths


def log_mlflow(
    uri: str,
    out: Path,
    name: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    files: Sequence[Path],
) -> str:
    """One MLflow run `name` in experiment `calibrate` with `params`, `metrics` and `files` as
    artifacts; returns its id."""
    import time

    from mlflow.entities import Metric, Param

    from sweep.tracking.mlflow_io import log_batch
    from sweep.tracking.tracker import Tracker

    tracker = Tracker(uri, "calibrate", out)
    client = tracker.client
    run = client.create_run(tracker.experiment_id, run_name=name)
    now = int(time.time() * 1000)
    log_batch(
        client,
        run.info.run_id,
        [Metric(k, float(v), now, 0) for k, v in metrics.items()],
        [Param(k, str(v)[:6000]) for k, v in params.items()],
        [],
    )
    for path in files:
        client.log_artifact(run.info.run_id, str(path))
    client.set_terminated(run.info.run_id, "FINISHED")
    return str(run.info.run_id)
