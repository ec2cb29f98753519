"""What a protocol's results are held to (bench/protocols/README.md): the ledger (`claim`) records the
protocol file's sha256 in a bench's results dir with the first results and refuses every later run on a
changed file, and the declared targets are measured on the bench's rows (exact McNemar tests on paired
(seed, item) episodes). Every problem is one `ConfigError` line naming the field and the fix."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.protocol import Protocol, load_protocol, next_version, protocol_hash, shown
from sweep.config.errors import ConfigError

LEDGER = "protocol.json"  # in a bench's results dir: the protocol file (by sha256) they were written under


def claim(
    out: str | Path, protocol_path: str | Path, pins: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The ledger. The first time, write `out/protocol.json` (the protocol's name, file, sha256,
    population digest, time and `pins`: digests of what it resolves to, e.g. its trainings); every later
    time, refuse a file whose sha256 differs, or a pin that differs from the stored one."""
    out, path = Path(out), Path(protocol_path)
    ledger, digest, file, new = out / LEDGER, protocol_hash(path), shown(path), next_version(path.stem)
    try:
        stored = json.loads(ledger.read_text(encoding="utf-8"))
        assert isinstance(stored, dict) and isinstance(stored.get("sha256"), str), "not a protocol ledger"
    except FileNotFoundError:
        stored = None
    except (OSError, ValueError, AssertionError) as e:
        raise ConfigError(f"{ledger}: unreadable ({e}); restore it, or give a new --out") from None
    if stored is not None:
        if stored["sha256"] != digest and stored.get("name") != path.stem:
            raise ConfigError(
                f"--out: {out} holds results of protocol {stored.get('name')} ({stored.get('file')}); "
                "give a new --out"
            )
        if stored["sha256"] != digest:
            raise ConfigError(
                f"protocol {file} changed after its results were first written in {out}; a protocol "
                f"change is a new file: copy it to bench/protocols/{new}.yaml"
            )
        for key, value in (pins or {}).items():
            if stored.get("pins", {}).get(key, value) != value:
                raise ConfigError(
                    f"protocol {file}: its {key} changed after its results were first written in {out} "
                    f"(a file or the code it resolves to); a change is a new protocol: copy it to "
                    f"bench/protocols/{new}.yaml"
                )
        return dict(stored)
    p = load_protocol(path)
    if out.is_dir() and any(out.iterdir()):
        raise ConfigError(
            f"--out: {out} holds results written without a protocol (a protocol is declared before its "
            "results); give a new --out"
        )
    record: dict[str, Any] = {"name": p.name, "file": file, "sha256": digest, "population": p.population}
    record |= {"population_digest": p.population_digest, "pins": dict(pins or {})}
    record["claimed_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    tmp = out / f".{LEDGER}.{os.getpid()}.tmp"
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, ledger)  # a reader sees no ledger or the whole of it
    except OSError as e:
        raise ConfigError(
            f"--out: cannot write {ledger} ({e.strerror or e}); give a writable --out"
        ) from None
    return record


def exact_mcnemar(a: Sequence[Any], b: Sequence[Any]) -> tuple[int, int, int, float]:
    """Two rows' per-seed tallies (`by_item`) paired on (seed, item): wins, losses, pairs and the exact
    two-sided McNemar p-value."""
    pairs = [(x.by_item[i], y.by_item[i]) for x, y in zip(a, b, strict=True) for i in x.by_item]
    wins, losses = sum(p and not q for p, q in pairs), sum(q and not p for p, q in pairs)
    n, k = wins + losses, min(wins, losses)
    p_value = min(1.0, 2 * sum(math.comb(n, j) for j in range(k + 1)) / 2**n) if n else 1.0
    return wins, losses, len(pairs), p_value


def measure(tallies: Sequence[Any], metric: str) -> float:
    """A row's metric: accuracy as the mean over seeds; tokens and cost per task, over every seed's items."""
    if metric == "accuracy":
        return statistics.mean(t.accuracy for t in tallies)
    return sum(getattr(t, metric) for t in tallies) / sum(len(t.by_item) for t in tallies)


def targets_table(p: Protocol, rows: Mapping[str, Sequence[Any]]) -> tuple[str, int]:
    """The declared targets as measured on the rows' per-seed tallies: a Markdown table, and how many pass."""
    lines, passed = ["| target | measured | pass | McNemar p |", "| --- | --- | --- | --- |"], 0
    for t in p.targets:
        a, b = measure(rows[t.compare], t.metric), measure(rows[t.against], t.metric)
        diff = (a / b - 1 if b else math.nan) if t.relative else a - b
        holds = diff >= t.margin if t.direction == ">=" else diff <= t.margin  # NaN fails both
        p_value = exact_mcnemar(rows[t.compare], rows[t.against])[3] if t.test == "mcnemar" else None
        ok = holds and (p_value is None or p_value < t.alpha)
        passed += ok
        fmt = "{:+.1%}" if t.relative else ("{:+.3f}" if t.metric == "accuracy" else "{:+.4g}")
        said = f"{t.compare} {t.metric} − {t.against} {t.direction} {fmt.format(t.margin)}"
        said += "" if p_value is None else f", McNemar p < {t.alpha:g}"
        p_shown = "–" if p_value is None else f"{p_value:.3g}"
        value = (
            "{:.3f}" if t.metric == "accuracy" else ("{:,.0f}" if max(abs(a), abs(b)) >= 1000 else "{:.4g}")
        )
        measured = f"{value.format(a)} vs {value.format(b)} ({fmt.format(diff)})"
        lines.append(f"| {said} | {measured} | {'pass' if ok else 'FAIL'} | {p_shown} |")
    return "\n".join(lines), passed
