"""What a GIL release costs a thread when another thread keeps the GIL busy, for the two releases the
driver's hot paths had: sqlite3's `executemany` (one release per row) against the call cache's
`_insert` (one per 128-row statement), and `hashlib` on a ~2.5 KB prompt in one piece (released for
2,048 bytes or more) against `debate.spec.hash_text`'s pieces (never released).

Each case runs alone, then beside a thread spinning in Python (as the event loop does beside the
cache's writer thread); prints the measuring thread's CPU and wall µs per row or per hash, best of
`--repeat`.

    .venv/bin/python bench/gil_release.py
    .venv/bin/python bench/gil_release.py --rows 20000 --hashes 50000 --repeat 5   # ~4 min
"""

from __future__ import annotations

import argparse
import hashlib
import json
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from debate.spec import hash_text  # noqa: E402
from sweep.store.cache import _connect, _insert  # noqa: E402

BATCH = 500  # rows per transaction, about what the cache's writer commits at once in a sweep
PROMPT = "x" * 2455  # the mean request text of `examples/simulated.yaml` (6,600 requests, 50 items)


def on_thread(fn: Callable[[], int]) -> tuple[float, float]:
    """(CPU µs, wall µs) per unit of `fn()` (which returns its unit count), run on a fresh thread."""
    out: list[float] = []

    def go() -> None:
        cpu, wall = time.thread_time(), time.perf_counter()
        n = fn()
        out.extend([(time.thread_time() - cpu) / n * 1e6, (time.perf_counter() - wall) / n * 1e6])

    t = threading.Thread(target=go)
    t.start()
    t.join()
    return out[0], out[1]


def inserts(rows: int, many: bool) -> Callable[[], int]:
    payload = json.dumps({"text": "x" * 200, "prompt_tokens": 600, "completion_tokens": 60})

    def run() -> int:
        with tempfile.TemporaryDirectory() as d:
            db = _connect(Path(d) / "c.sqlite", isolation_level="DEFERRED")
            db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, completion TEXT NOT NULL)")
            keys = [secrets.token_hex(16) for _ in range(rows)]
            for i in range(0, rows, BATCH):
                batch = [(k, payload) for k in keys[i : i + BATCH]]
                with db:
                    if many:
                        db.executemany("INSERT OR IGNORE INTO calls VALUES (?, ?)", batch)
                    else:
                        _insert(db, batch)
            db.close()
        return rows

    return run


def hashes(count: int, pieces: bool) -> Callable[[], int]:
    def run() -> int:
        for _ in range(count):
            if pieces:
                hash_text(PROMPT, 32)
            else:
                hashlib.blake2b(PROMPT.encode(), digest_size=32).hexdigest()[:32]
        return count

    return run


def spin(stop: threading.Event) -> None:
    """Keep the GIL busy in Python until `stop` is set."""
    x = 0
    while not stop.is_set():
        x += 1


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=4000, help="rows inserted per run")
    p.add_argument("--hashes", type=int, default=5000, help="hashes per run")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    cases = [
        ("sqlite executemany (per row)", inserts(a.rows, True)),
        ("cache _insert, 128 rows a statement", inserts(a.rows, False)),
        ("blake2b of 2,455 B, one piece", hashes(a.hashes, False)),
        ("hash_text, pieces of 2,047 B", hashes(a.hashes, True)),
    ]
    print(
        f"{'case':38s} {'alone cpu':>10s} {'alone wall':>11s} {'busy cpu':>9s} {'busy wall':>10s}  (µs, best of {a.repeat})"
    )
    for name, fn in cases:
        alone = [on_thread(fn) for _ in range(a.repeat)]
        stop = threading.Event()
        spinner = threading.Thread(target=spin, args=(stop,), daemon=True)
        spinner.start()
        try:
            busy = [on_thread(fn) for _ in range(a.repeat)]
        finally:
            stop.set()
            spinner.join()
        best = [min(r[i] for r in runs) for runs in (alone, busy) for i in (0, 1)]
        print(f"{name:38s} {best[0]:10.1f} {best[1]:11.1f} {best[2]:9.1f} {best[3]:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
