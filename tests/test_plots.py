"""The Pareto plot's labels: on a crowded plane (many methods with long labels within a few tokens
and points of each other) no two label boxes of the rendered figure intersect, none covers another
method's marker or the legend, each names its own point, and a label moved far from its point has a
leader line to it. The figure is also written as PNG the way the report writes it."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from sweep.report.plots import pareto_figure, pareto_plot, plain


def _rows(n: int, spread: float, corner: bool = False) -> list[dict[str, Any]]:
    """`n` methods on a small patch of the plane (jittered, deterministic), every third on the front;
    `corner`: the patch in the top right corner, beside the legend (one more method far below left)."""
    topologies = ["clique", "star", "ring", "chain", "zero"]
    rows = []
    for i in range(n):
        label = f"fixed(topology={topologies[i % 5]}, protocol=critique_revise, seed_group={i})"
        rows.append({
            "method_label": label if i % 2 else f"cot_sc(m={i})",
            "pareto_axis": "tokens_per_task",
            "tokens_per_task": 1000 + spread * ((i * 7) % 5),
            "accuracy_mean": 0.60 + spread / 1000 * ((i * 3) % 4),
            "accuracy_std": 0.01,
            "pareto": i % 3 == 0,
        })  # fmt: skip
    if corner:
        rows.append({**rows[0], "method_label": "cot", "tokens_per_task": 10.0, "accuracy_mean": 0.1})
    return rows


def _boxes(fig: Any) -> list[tuple[str, Any, Any]]:
    """(text, text box in pixels, annotation) of every label as drawn."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    return [(a.get_text(), Text.get_window_extent(a, renderer), a) for a in ax.texts]


@pytest.mark.parametrize(
    ("n", "spread", "corner"), [(14, 2.0, False), (8, 0.0, False), (3, 40.0, False), (16, 0.0, True)]
)
def test_pareto_labels_do_not_overlap(n: int, spread: float, corner: bool) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.transforms import Bbox

    rows = _rows(n, spread, corner)
    fig = pareto_figure(rows, "accuracy vs cost: crowded")
    try:
        boxes = _boxes(fig)
        ax = fig.axes[0]
        assert sorted(t for t, _, _ in boxes) == sorted(plain(r["method_label"]) for r in rows)
        for (a, box_a, _), (b, box_b, _) in itertools.combinations(boxes, 2):
            assert not box_a.overlaps(box_b), (a, b)
        legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
        points = {
            plain(r["method_label"]): ax.transData.transform((r["tokens_per_task"], r["accuracy_mean"]))
            for r in rows
        }
        plane = ax.get_window_extent(fig.canvas.get_renderer())
        for text, box, note in boxes:
            assert not box.overlaps(legend), text
            if not corner:  # room enough in the plane: no label leaves it
                assert plane.contains(box.x0, box.y0) and plane.contains(box.x1, box.y1), text
            assert tuple(ax.transData.transform(note.xy)) == pytest.approx(
                tuple(points[text])
            )  # its own point
            for other, (px, py) in points.items():  # a label never hides a marker, its own included
                assert not box.overlaps(Bbox.from_extents(px - 3, py - 3, px + 3, py + 3)), (text, other)
            near = box.expanded(1.0, 1.0).padded(20).contains(*points[text])
            assert near or note.arrow_patch is not None, text  # far from its point: a leader line
    finally:
        plt.close(fig)


def test_a_crowded_pareto_plot_moves_labels_off_their_points_with_leader_lines(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = pareto_figure(_rows(8, 0.0), "all on one point")  # eight methods at the same place
    try:
        leaders = [a for _, _, a in _boxes(fig) if a.arrow_patch is not None]
        assert len(leaders) >= 4  # four diagonals next to the point; the others had to go farther
    finally:
        plt.close(fig)
    path = tmp_path / "plots" / "pareto.png"
    pareto_plot(_rows(14, 2.0), "accuracy vs cost", path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("n", [12, 60])  # 60: some find no free place near and stack above the rest
def test_labels_pushed_out_of_a_small_plane_keep_off_the_legend(n: int) -> None:
    import matplotlib.pyplot as plt

    from sweep.report.plots import place_labels

    fig: Any
    fig, ax = plt.subplots(figsize=(3, 2))
    try:
        ax.plot([0, 1], [0, 1], "o", label="methods")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        notes = place_labels(ax, [(f"a long method label number {i}", 1.0, 1.0) for i in range(n)])
        boxes = [box for _, box, _ in _boxes(fig)]
        shown = ax.get_legend()
        assert shown is not None
        legend = shown.get_window_extent(fig.canvas.get_renderer())
        inside = ax.get_window_extent(fig.canvas.get_renderer())
        assert len(notes) == len(boxes) == n
        assert any(not inside.contains(b.x1, b.y1) for b in boxes)  # the plane was full: some went out
        assert not any(b.overlaps(legend) for b in boxes)
        assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    finally:
        plt.close(fig)
