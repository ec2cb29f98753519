"""bench/calibration_errors.py: a calibration report's error grouped by method and member, with each
method's gap to the reference method as published and as predicted."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bench/ is not an installed package

from bench.calibration_errors import main  # noqa: E402

FIELDS = ["label", "dataset", "split", "published_acc", "predicted_acc"]
ROWS = [
    ("Clique A", "d1", "fit", 50, 51),
    ("Clique A", "d2", "fit", 60, 60),
    ("Chain A", "d1", "predict", 55, 50),  # -5; published +5 over Clique, predicted -1
    ("Chain A", "d2", "predict", 62, 63),  # +1; +2 / +3
    ("Star B", "d1", "predict", 40, 42),  # no Clique row for member B: no gap
]


def write(tmp_path: Path, rows: list[tuple[object, ...]] = ROWS) -> Path:
    path = tmp_path / "report.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        w.writerows(rows)
    return path


def test_the_error_is_grouped_by_method_and_member_largest_share_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main([str(write(tmp_path))])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "predict rows: 3, mean absolute error 2.67 points"
    assert out[4] == "| Chain | A | 2 | -2.00 | 3.00 | 75% | +3.5 | +1.0 |"
    assert out[5] == "| Star | B | 1 | +2.00 | 2.00 | 25% | – | – |"
    main([str(write(tmp_path)), "--split", "fit"])
    assert "| Clique | A | 2 | +0.50 | 0.50 | 100% | – | – |" in capsys.readouterr().out


def test_a_file_that_is_not_a_report_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="lacks dataset, label, predicted_acc, published_acc, split"):
        main([str(bad)])
    with pytest.raises(SystemExit, match="cannot read"):
        main([str(tmp_path / "none.csv")])
    with pytest.raises(SystemExit, match="no 'predict' rows"):
        main([str(write(tmp_path, ROWS[:2]))])
