"""The report's figures (matplotlib, PNG), one set per (team, dataset, split): the accuracy–cost
plane with its Pareto front, vote accuracy by round, every per-round diagnostic, and the Holm-adjusted
McNemar p-values between methods."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from sweep.report.rounds import ROUND_SERIES
from sweep.report.sections import Tables

DIAGNOSTIC_PANELS = [c for c in ROUND_SERIES if c not in ("vote_accuracy", "calls")]


@dataclass(frozen=True)
class Figure:
    title: str
    path: Path  # under the report dir


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: never a display
    import matplotlib.pyplot as plt

    return plt


def _integer_ticks() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def plain(label: str) -> str:
    """A label drawn as written: '$' would start matplotlib's math mode (and fail when unbalanced)."""
    return label.replace("$", r"\$")


def slug(*parts: object) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "__".join(map(str, parts))).strip("_")[:120]


def _save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    _pyplot().close(fig)


def pareto_plot(rows: list[dict[str, Any]], title: str, path: Path) -> None:
    _save(pareto_figure(rows, title), path)


def pareto_figure(rows: list[dict[str, Any]], title: str) -> Any:
    """The accuracy–cost plane of `rows` (one per method) with the Pareto front; every point labelled,
    no two labels overlapping (`place_labels`)."""
    plt = _pyplot()
    axis = rows[0]["pareto_axis"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in rows:
        ax.errorbar(
            r[axis],
            r["accuracy_mean"],
            yerr=r["accuracy_std"] or 0,
            fmt="o" if r["pareto"] else "s",
            color="C3" if r["pareto"] else "C0",
            capsize=3,
        )
    front = sorted((r[axis], r["accuracy_mean"]) for r in rows if r["pareto"])
    ax.plot([x for x, _ in front], [y for _, y in front], color="C3", alpha=0.5, label="Pareto front")
    ax.set_xlabel("cost per task (price-weighted)" if axis == "cost_per_task" else "tokens per task")
    ax.set_ylabel("accuracy (mean ± std over seeds)")
    ax.set_title(title, fontsize=9)
    # Beside the plane, not in it: a legend placed "best" inside would move once the labels are there.
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    # The front's labels choose their places first: they are the ones a reader looks for.
    order = sorted(rows, key=lambda r: (not r["pareto"], -r["accuracy_mean"], r[axis]))
    place_labels(ax, [(plain(r["method_label"]), r[axis], r["accuracy_mean"]) for r in order])
    return fig


LABEL_RADII = (6, 11, 17, 25, 34, 45, 58, 72, 88, 106, 126, 150)  # points from the labelled point
LEADER_FROM = 12  # points: a label placed farther than this gets a line to its point


def _candidates() -> list[tuple[float, float, str, str]]:
    """Offsets (points) and alignments to try for a label, nearest first: the four diagonals, then
    above, below, right and left, then (farther out) the directions between."""
    out = []
    for radius in LABEL_RADII:
        between = [22, -22, 158, -158, 68, -68, 112, -112] if radius > 20 else []
        for deg in [45, -45, 135, -135, 90, -90, 0, 180, *between]:
            dx, dy = radius * math.cos(math.radians(deg)), radius * math.sin(math.radians(deg))
            ha = "left" if dx > 1 else "right" if dx < -1 else "center"
            va = "bottom" if dy > 1 else "top" if dy < -1 else "center"
            out.append((dx, dy, ha, va))
    return out


def place_labels(ax: Any, labels: list[tuple[str, float, float]], fontsize: float = 7) -> list[Any]:
    """Annotate each (text, x, y) in turn at the nearest place (`_candidates`) where its box overlaps
    no label placed before, no marker and not the legend, inside the axes when one is free there; a
    far label gets a leader line. Greedy, so the order of `labels` is their priority. Returns the
    annotations. Call it once the plot's data and limits are final: boxes are measured in pixels."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    ax.autoscale_view()
    inside = ax.get_window_extent(renderer)
    taken: list[Any] = []  # boxes no label may overlap: markers, the legend, the labels placed
    for _, x, y in labels:
        px, py = ax.transData.transform((x, y))
        taken.append(Bbox.from_extents(px - 4, py - 4, px + 4, py + 4))
    if ax.get_legend() is not None:
        taken.append(ax.get_legend().get_window_extent(renderer))
    placed = []
    for text, x, y in labels:
        probe = ax.annotate(text, (x, y), xytext=(0, 0), textcoords="offset points", fontsize=fontsize)
        chosen: tuple[float, float, str, str] | None = None
        outside: tuple[float, float, str, str] | None = None
        for dx, dy, ha, va in _candidates():
            probe.set_position((dx, dy))
            probe.set_horizontalalignment(ha)
            probe.set_verticalalignment(va)
            probe.update_positions(renderer)
            box = Text.get_window_extent(probe, renderer).padded(1)
            if any(box.overlaps(other) for other in taken):
                continue
            if inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1):
                chosen = (dx, dy, ha, va)
                break
            outside = outside or (dx, dy, ha, va)
        probe.remove()
        spot = chosen or outside
        if spot is None:  # nowhere near is free: above everything taken
            top = max(b.y1 for b in taken)
            spot = (0.0, (top - ax.transData.transform((x, y))[1] + 4) * 72 / fig.dpi, "center", "bottom")
        dx, dy, ha, va = spot
        leader = {"arrowstyle": "-", "color": "0.55", "lw": 0.6} if math.hypot(dx, dy) > LEADER_FROM else None
        note = ax.annotate(
            text,
            (x, y),
            xytext=(dx, dy),
            textcoords="offset points",
            fontsize=fontsize,
            ha=ha,
            va=va,
            arrowprops=leader,
        )
        note.update_positions(renderer)
        taken.append(Text.get_window_extent(note, renderer).padded(1))
        placed.append(note)
    return placed


def _series(frame: pl.DataFrame, order: list[str], column: str) -> list[tuple[str, list[int], list[float]]]:
    out = []
    for key in [k for k in order if k in set(frame["method_key"].to_list())]:
        mine = frame.filter((pl.col("method_key") == key) & pl.col(column).is_not_null()).sort("round")
        if mine.height:
            out.append((plain(mine["method_label"][0]), mine["round"].to_list(), mine[column].to_list()))
    return out


def rounds_plot(frame: pl.DataFrame, order: list[str], title: str, path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, xs, ys in _series(frame, order, "vote_accuracy"):
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xlabel("round")
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set_ylabel("accuracy of the vote")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    _save(fig, path)


def diagnostics_plot(frame: pl.DataFrame, order: list[str], title: str, path: Path) -> bool:
    """Small multiples of every per-round diagnostic that some method defines and that is not zero
    throughout (critiques under the update protocol); False if none is left."""
    panels = [c for c in DIAGNOSTIC_PANELS if c in frame.columns and (frame[c].drop_nulls() != 0).any()]
    if not panels:
        return False
    plt = _pyplot()
    cols = 4
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False)
    for ax, column in zip(axes.flat, panels, strict=False):
        for label, xs, ys in _series(frame, order, column):
            ax.plot(xs, ys, marker=".", label=label)
        ax.set_title(column, fontsize=8)
        ax.xaxis.set_major_locator(_integer_ticks())
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=3,
        fontsize=7,
        bbox_to_anchor=(0.5, -0.02 - 0.03 * len(labels) / 3),
    )
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    return True


def mcnemar_plot(
    frame: pl.DataFrame, order: list[str], labels: dict[str, str], title: str, path: Path
) -> None:
    plt = _pyplot()
    keys = [k for k in order if k in set(frame["a"].to_list()) | set(frame["b"].to_list())]
    n = len(keys)
    grid = [[math.nan] * n for _ in range(n)]
    for r in frame.iter_rows(named=True):
        i, j = keys.index(r["a"]), keys.index(r["b"])
        if r["p_holm"] is not None:
            grid[i][j] = grid[j][i] = r["p_holm"]
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * n, 0.6 + 0.6 * n))
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis_r")
    for i in range(n):
        for j in range(n):
            if grid[i][j] == grid[i][j]:
                ax.text(
                    j,
                    i,
                    f"{grid[i][j]:.2g}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="w" if grid[i][j] < 0.5 else "k",
                )
    ax.set_xticks(range(n), [plain(labels[k]) for k in keys], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(n), [plain(labels[k]) for k in keys], fontsize=7)
    fig.colorbar(image, ax=ax, label="McNemar p (Holm)")
    ax.set_title(title, fontsize=9)
    _save(fig, path)


def make_figures(t: Tables, out: Path) -> list[Figure]:
    """Every figure of the report, written as PNG under `out/plots/`; paths relative to `out`."""
    figures: list[Figure] = []
    labels = dict(t.summary.select("method_key", "method_label").iter_rows())
    for values, rows in sorted(
        t.summary.group_by("team", "dataset", "split"), key=lambda g: tuple(map(str, g[0]))
    ):
        name = " · ".join(map(str, values))
        tag = slug(*values)
        pareto = Path("plots") / f"pareto__{tag}.png"
        pareto_plot(list(rows.iter_rows(named=True)), f"accuracy vs cost: {name}", out / pareto)
        figures.append(Figure(f"Accuracy vs cost — {name}", pareto))
        per_round = t.per_round.filter(
            pl.all_horizontal(
                pl.col(c) == v for c, v in zip(("team", "dataset", "split"), values, strict=True)
            )
        )
        path = Path("plots") / f"rounds__{tag}.png"
        rounds_plot(per_round, t.order, f"accuracy by round: {name}", out / path)
        figures.append(Figure(f"Accuracy by round — {name}", path))
        path = Path("plots") / f"diagnostics__{tag}.png"
        if diagnostics_plot(per_round, t.order, f"diagnostics by round: {name}", out / path):
            figures.append(Figure(f"Diagnostics by round — {name}", path))
        pairs = t.mcnemar.filter(
            pl.all_horizontal(
                pl.col(c) == v for c, v in zip(("team", "dataset", "split"), values, strict=True)
            )
        )
        if pairs.height:
            path = Path("plots") / f"mcnemar__{tag}.png"
            mcnemar_plot(pairs, t.order, labels, f"McNemar p (Holm): {name}", out / path)
            figures.append(Figure(f"McNemar p-values — {name}", path))
    return figures
