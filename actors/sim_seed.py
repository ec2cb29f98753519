"""`np.random.default_rng(entropy)` for a list of non-negative ints: the same stream at about half
the cost. The simulated engine seeds a fresh generator for every call, and numpy's seeding (a
`SeedSequence` from a list of Python ints, then a new `PCG64`) took 26-38 us a call here (`timeit`),
`seeded` 16 us.

Numpy's steps, redone where they were slow: the ints' 32-bit words (`_coerce_to_uint32_array`, a
Python loop per int in numpy), then numpy's own `SeedSequence` pool from an array, then
`generate_state` and `pcg64_set_seed` in plain integer arithmetic (as `bit_generator.pyx` and
`pcg64.c` do them), set as the state of one reused `PCG64` (one per thread) instead of a new one.
`tests/test_sim_seed.py` holds every draw to numpy's own seeding."""

from __future__ import annotations

import threading

import numpy as np

_MASK32 = 0xFFFFFFFF
_MASK128 = (1 << 128) - 1
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_POOL = 4  # SeedSequence's default pool size, in 32-bit words
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645  # PCG_DEFAULT_MULTIPLIER_128


def _words(entropy: list[int]) -> list[int]:
    """`_coerce_to_uint32_array(entropy)`: each int as its 32-bit words, least significant first."""
    out: list[int] = []
    for n in entropy:
        if n < 0:
            raise ValueError("expected non-negative integers")
        if n == 0:
            out.append(0)
        while n:
            out.append(n & _MASK32)
            n >>= 32
    return out


def _pool(words: list[int]) -> list[int]:
    """SeedSequence's `mix_entropy`: its 4-word pool (numpy's own, from an array: the slow part of
    its seeding was the list's conversion, and this mixing is ~2x slower in Python)."""
    pool: list[int] = np.random.SeedSequence(np.array(words, dtype=np.uint32)).pool.tolist()
    return pool


def _constants() -> list[tuple[int, int, int]]:
    """`generate_state`'s per-word (pool index, xor constant, multiplier): they depend on nothing
    but the word's position."""
    out, h = [], _INIT_B
    for i in range(8):
        nxt = (h * _MULT_B) & _MASK32
        out.append((i % _POOL, h, nxt))
        h = nxt
    return out


_STATE_WORDS = _constants()


def _state128(pool: list[int]) -> tuple[int, int]:
    """`generate_state(4, np.uint64)` read as PCG64's (initstate, initseq), then `pcg64_set_seed`:
    the generator's (state, inc)."""
    w = [(v := ((pool[i] ^ x) * m) & _MASK32) ^ (v >> 16) for i, x, m in _STATE_WORDS]
    # The uint32 words viewed as uint64 (little-endian); the first of each pair is the high half.
    initstate = (w[0] | w[1] << 32) << 64 | w[2] | w[3] << 32
    initseq = (w[4] | w[5] << 32) << 64 | w[6] | w[7] << 32
    inc = (initseq << 1 | 1) & _MASK128
    state = (((inc + initstate) & _MASK128) * _PCG_MULT + inc) & _MASK128  # two steps from state 0
    return state, inc


_local = threading.local()


def seeded(entropy: list[int]) -> np.random.Generator:
    """What `np.random.default_rng(entropy)` returns, drawn for drawn, for non-negative ints. The
    generator is reused by the next call on this thread: use it before seeding another."""
    state, inc = _state128(_pool(_words(entropy)))
    gen: np.random.Generator | None = getattr(_local, "gen", None)
    if gen is None:
        gen = _local.gen = np.random.Generator(np.random.PCG64(0))
    gen.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": state, "inc": inc},
        "has_uint32": 0,
        "uinteger": 0,
    }
    return gen
