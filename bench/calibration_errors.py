"""Where a calibration's held-out error comes from: a `sweep calibrate` report's CSV
(docs/calibration/<paper>-<version>.csv) grouped by method and member, each group's mean signed and
absolute error over its benchmarks, its share of the split's mean absolute error, and, where the
member has a fit row of the reference method (`--against`, default Clique) on the same benchmark,
the method's gap to it as published and as predicted (does the population rank the method against the
dense graph as the paper does?).

    .venv/bin/python bench/calibration_errors.py docs/calibration/pear-v9.csv
    .venv/bin/python bench/calibration_errors.py docs/calibration/pear-v9.csv --split fit
    .venv/bin/python bench/calibration_errors.py docs/calibration/cpp-v9.csv --against Full-Debate

Rows are labelled "<method> <member>" (PEAR's targets) or "<method>" (one team: CPP's, RUMAD's).
Reads the file only; no population is loaded and nothing runs.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path


def groups(rows: list[dict[str, str]], split: str) -> dict[tuple[str, str], list[tuple[str, float, float]]]:
    """(method, member) -> [(dataset, published, predicted)] for the rows of `split`."""
    out: dict[tuple[str, str], list[tuple[str, float, float]]] = defaultdict(list)
    for r in rows:
        if r["split"] == split and r["predicted_acc"]:
            method, _, member = r["label"].partition(" ")
            out[(method, member)].append((r["dataset"], float(r["published_acc"]), float(r["predicted_acc"])))
    return out


def table(rows: list[dict[str, str]], split: str, against: str = "Clique") -> str:
    """The report: one line per (method, member), largest share of the error first; gaps to `against`."""
    got = groups(rows, split)
    if not got:
        raise SystemExit(f"error: no '{split}' rows with a prediction; give --split fit or predict")
    ref = {
        (member, d): (pub, pred)
        for (m, member), v in groups(rows, "fit").items()
        if m == against
        for d, pub, pred in v
    }
    total = sum(abs(pred - pub) for v in got.values() for _, pub, pred in v)
    n = sum(len(v) for v in got.values())
    lines = [
        f"{split} rows: {n}, mean absolute error {total / n:.2f} points",
        "",
        f"| method | member | rows | mean signed error | mean abs error | share of the error | vs {against}, published | vs {against}, predicted |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = sorted(got.items(), key=lambda kv: -sum(abs(p - q) for _, q, p in kv[1]))
    for (method, member), v in order:
        errs = [pred - pub for _, pub, pred in v]
        gaps = [
            (pub - ref[(member, d)][0], pred - ref[(member, d)][1])
            for d, pub, pred in v
            if (member, d) in ref
        ]
        vs = (
            (f"{statistics.mean(a for a, _ in gaps):+.1f}", f"{statistics.mean(b for _, b in gaps):+.1f}")
            if gaps and method != against
            else ("–", "–")
        )
        share = sum(abs(e) for e in errs) / total if total else 0.0
        lines.append(
            f"| {method} | {member or '–'} | {len(v)} | {statistics.mean(errs):+.2f} | "
            f"{statistics.mean(abs(e) for e in errs):.2f} | {share:.0%} | {vs[0]} | {vs[1]} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", type=Path, help="a calibration report's CSV (docs/calibration/*.csv)")
    p.add_argument("--split", default="predict", choices=["fit", "predict"])
    p.add_argument(
        "--against", default="Clique", help="the reference method (a fit row per member and benchmark)"
    )
    args = p.parse_args(argv)
    try:
        rows = list(csv.DictReader(args.csv.open(encoding="utf-8")))
    except OSError as e:
        raise SystemExit(
            f"error: csv: cannot read {args.csv} ({e.strerror}); give a calibration report's CSV"
        ) from None
    missing = {"label", "dataset", "split", "published_acc", "predicted_acc"} - set(rows[0] if rows else {})
    if missing:
        raise SystemExit(
            f"error: csv: {args.csv} lacks {', '.join(sorted(missing))}; give a calibration report's CSV"
        )
    print(table(rows, args.split, args.against))


if __name__ == "__main__":
    main()
