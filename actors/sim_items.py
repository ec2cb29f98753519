"""What the simulated populations share about an item: its wrong answers (the slips a real model
plausibly makes, most common first), a difficulty hashed from the item, and the calibrated
confidence tables; shared by model v1 (`actors.simulated`) and v2 (`actors.population`)."""

from __future__ import annotations

import hashlib
import math
from functools import lru_cache

import numpy as np

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Calibrated confidence 1..5: overlapping, so confidence is evidence of correctness but not proof.
# Cumulative, for a bisection (as floats: `bisect_right` on them is `np.searchsorted(side="right")`).
CONF_RIGHT = np.cumsum([0.0, 0.05, 0.15, 0.40, 0.40]).tolist()
CONF_WRONG = np.cumsum([0.15, 0.30, 0.30, 0.20, 0.05]).tolist()
CONF_UNIFORM = np.cumsum([0.2] * 5).tolist()


@lru_cache(maxsize=64)
def popularity(k: int) -> list[float]:
    """Cumulative popularity of `k` distractors: the first is the common misconception."""
    return np.cumsum(0.55 ** np.arange(k)).tolist()


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of `parts`, the same in every process (unlike the salted built-in `hash`)."""
    data = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) and abs(v) < 1e15 else f"{v:.6f}".rstrip("0").rstrip(".")


def _candidates(kind: str, gold: str, n_choices: int, k: int) -> list[str]:
    """Wrong answers a real model plausibly gives for this gold, most common slips first."""
    if kind == "choice" and len(gold) == 1 and gold.upper() in LETTERS:
        return [c for c in LETTERS[: max(n_choices, LETTERS.index(gold.upper()) + 1)] if c != gold.upper()]
    try:
        g = float(gold)
    except ValueError:
        g = math.nan
    if not math.isfinite(g):  # a non-numeric (LaTeX) gold: structural slips
        return [f"{gold}+1", f"2({gold})", f"({gold})^2", f"{gold}-1", f"\\frac{{{gold}}}{{2}}"]
    raw = [g + 1, g - 1, g * 2, g + 10, g - 10, g + 2, g - 2, g * 10, g / 2, -g]
    raw += [g + j for j in range(3, k + 10)]  # filler, so any `distractors` count k can be met
    return list(dict.fromkeys(_fmt(v) for v in raw if math.isfinite(v) and v != g and (v >= 0 or g < 0)))


@lru_cache(maxsize=65536)
def item_profile(item: str, gold: str, kind: str, n_choices: int, k: int) -> tuple[float, tuple[str, ...]]:
    """(difficulty, distractors): the same for every agent and model, from a hash of (item, gold)."""
    rng = np.random.default_rng(stable_hash("item", item, gold))
    difficulty = float(rng.random())
    cands = _candidates(kind, gold, n_choices, k)
    head = cands[:6]  # the common slips, shuffled per item; fillers only pad short lists
    rng.shuffle(head)
    return difficulty, tuple((head + cands[6:])[:k])
