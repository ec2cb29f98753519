"""How fast `sweep view` opens a sweep and shows an episode. Starts the viewer as a user would
(`python -m sweep view OUT --port 0`, a child process) and times, from the moment it is started:
the server answering (the episode index read), the first page of the list, and opening episodes (the
first, then `--episodes` random others); with `--browser` also the page itself in headless Debian
chromium: load → list shown → click the first row → transcript rendered.

    .venv/bin/python bench/view_latency.py runs/pear_simulated              # 10,000 episodes
    .venv/bin/python bench/view_latency.py runs/pear_simulated --browser    # + the page in chromium
    .venv/bin/python bench/view_latency.py runs/pear_simulated --replicate 10   # a 100,000-episode copy

The goal: a 10,000-episode sweep opens and shows an episode in under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere


def rows_in(folder: Path) -> tuple[int, int]:
    """(parts, rows) of a Parquet folder, from the files' footers only."""
    parts = sorted(folder.glob("part-*.parquet"))
    return len(parts), sum(pq.ParquetFile(p).metadata.num_rows for p in parts)


def replicate(out: Path, n: int, dest: Path) -> Path:
    """`n` copies of every part of `out` under `dest` (ids suffixed, seeds shifted by 1000 per copy):
    a sweep n times the size, for the viewer only (the copies are the same debates)."""
    import polars as pl

    for k in range(n):
        for table in ("episodes", "turns", "rounds"):
            (dest / table).mkdir(parents=True, exist_ok=True)
            for part in sorted((out / table).glob("part-*.parquet")):
                frame = pl.read_parquet(part).with_columns(pl.col("episode_id") + f"-r{k}")
                if table == "episodes":
                    frame = frame.with_columns(pl.col("seed") + 1000 * k)
                frame.write_parquet(dest / table / part.name.replace("part-", f"part-r{k:03d}-"))
    return dest


def get(url: str) -> tuple[float, Any]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        body = json.loads(r.read())
    return time.perf_counter() - t0, body


def start_viewer(out: Path) -> tuple[subprocess.Popen[str], str, float]:
    """The viewer process, its URL and the seconds until it printed it (index read, socket bound)."""
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "sweep", "view", str(out), "--port", "0"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("sweep view: "):
        proc.kill()
        raise SystemExit(f"the viewer did not start: {line!r}")
    return proc, line.split()[2], time.perf_counter() - t0


def browser_time(url: str) -> tuple[float, float]:
    """Seconds from navigation to the list shown, and to the first row's transcript rendered."""
    from tests.browser import chromium, console_errors, wait_for

    with chromium() as driver:
        driver.get("about:blank")
        t0 = time.perf_counter()
        driver.get(url)
        rows = wait_for(driver, "#list tbody tr", timeout=60)
        listed = time.perf_counter() - t0
        rows[0].click()
        wait_for(driver, "#panes .round", timeout=60)
        shown = time.perf_counter() - t0
        if errors := console_errors(driver):
            raise SystemExit(f"console errors: {errors}")
    return listed, shown


def sample_ids(url: str, total: int, n: int) -> list[str]:
    """`n` episode ids from two pages of the list: the first and one at a random offset."""
    offset = random.Random(0).randrange(0, max(1, total - 500))
    ids = [r["episode_id"] for r in get(url + "api/episodes?limit=500")[1]["rows"]]
    ids += [r["episode_id"] for r in get(url + f"api/episodes?limit=500&offset={offset}")[1]["rows"]]
    return random.Random(1).sample(ids, min(n, len(ids)))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a sweep's output dir")
    parser.add_argument("--episodes", type=int, default=50, help="random episodes to open after the first")
    parser.add_argument("--browser", action="store_true", help="also time the page in headless chromium")
    parser.add_argument("--replicate", type=int, default=1, help="time a copy N times the size (temp dir)")
    args = parser.parse_args(argv)
    if args.replicate > 1:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="view-bench-") as tmp:
            args.out = replicate(args.out, args.replicate, Path(tmp))
            measure(args)
        return
    measure(args)


def measure(args: argparse.Namespace) -> None:
    """Print the figures for `args.out`."""
    parts, episodes = rows_in(args.out / "episodes")
    print(
        f"{args.out}: {episodes:,} episode rows, {rows_in(args.out / 'turns')[1]:,} turn rows, {parts} parts"
    )
    t_start = time.perf_counter()
    proc, url, ready = start_viewer(args.out)
    try:
        listed, page = get(url + "api/episodes?limit=50")
        first_s, first = get(url + f"api/episode?id={page['rows'][0]['episode_id']}")
        total = time.perf_counter() - t_start
        times = [get(url + f"api/episode?id={i}")[0] for i in sample_ids(url, page["total"], args.episodes)]
        print(f"viewer started, index read: {ready:.2f} s (process start to URL printed)")
        print(f"first list page (50 of {page['total']:,}): {listed * 1000:.0f} ms")
        calls = sum(len(a) for r in first["rounds"] for a in r["agents"])
        print(f"first episode ({calls} turns, {len(first['rounds'])} rounds): {first_s * 1000:.0f} ms")
        q = statistics.quantiles(times, n=20) if len(times) > 1 else times * 19
        print(
            f"{len(times)} random episodes: median {statistics.median(times) * 1000:.0f} ms, "
            f"p95 {q[18] * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
        )
        print(f"open + list + first episode: {total:.2f} s (goal: under 2 s)")
        if args.browser:
            listed_b, shown_b = browser_time(url)
            print(f"headless chromium: list shown {listed_b:.2f} s, transcript rendered {shown_b:.2f} s")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
