"""bench/cpp_appendix_d.py: Appendix D's 72 points, scored at a population's expected accuracy."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bench/ is not an installed package

from bench.cpp_appendix_d import appendix_d, errors, main  # noqa: E402
from sweep.calibrate.targets import load_targets  # noqa: E402


def test_the_points_are_each_models_consistency_from_two_to_nine() -> None:
    rows = appendix_d(load_targets(ROOT / "calibration" / "cpp.yaml").rows)
    assert len(rows) == 72  # 3 models x n = 2..9 x 3 benchmarks; Fuse and n = 10, 11, 12 left out
    assert {r.label.split(" ")[0] for r in rows} == {
        "Consistency-Grok",
        "Consistency-GPT",
        "Consistency-Mistral",
    }


def test_the_shipped_population_is_scored_without_seed_noise(capsys: pytest.CaptureFixture[str]) -> None:
    errs = errors(str(ROOT / "calibration" / "cpp.yaml"), "cpp")
    assert [e for e, *_ in errs] == sorted((e for e, *_ in errs), reverse=True)
    assert all(abs(abs(got - pub) - e) < 1e-9 for e, _, pub, got in errs)
    # recorded from the shipped v5 file: one point past 3 (GPT's two samples on GPQA-Diamond)
    assert errs[0][1] == "gpqa_diamond/Consistency-GPT n=2" and errs[0][0] == pytest.approx(3.73, abs=0.01)
    main(["cpp", "--show", "1"])
    assert (
        "| cpp | 72 | 71 within 3 | gpqa_diamond/Consistency-GPT n=2: 39.33 → 43.06 |"
        in capsys.readouterr().out
    )


def test_an_unknown_population_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["no-such-population"])
    assert e.value.code == 2
    assert "no-such-population" in capsys.readouterr().err
