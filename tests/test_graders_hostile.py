"""Hostile model output: 10,000 generated outputs (huge, deeply nested braces, LaTeX bombs, invalid
UTF-8 and lone surrogates, regex traps) never crash a grader, and every grading call returns in 1 s.

"1 s" is checked two ways: the CPU time a call uses (this thread's, plus the math worker's) must stay
under 1 s, which no machine load changes; and the wall time must stay under 1 s times the machine's
contention (load average per core, at least 1), since on a machine busier than its cores a call
waits for a core however little work it does."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator

import pytest

from data.grading.graders import ChoiceGrader, MathGrader, NumericGrader
from data.grading.mathcheck import checker

N_OUTPUTS = 10_000
PER_CALL_LIMIT_S = 1.0
FRAGMENTS = [
    "The answer is ",
    "Answer: ",
    "#### ",
    "\\boxed{",
    "}",
    "{",
    "$",
    "\\(",
    "\\)",
    "\\frac{",
    "}{",
    "^{",
    "9",
    "1,000",
    "-",
    "\u2212",
    ".",
    "/",
    "%",
    "A",
    "(B)",
    " C.",
    "I ",
    "a ",
    "answer was ",
    "option ",
    "\\text{",
    "\\left(",
    "\\right)",
    "\\sqrt",
    "!",
    "\n",
    " ",
    "\x00",
    "\u202e",
    "\ufeff",
    "e5",
    "\\\\",
    '{"answer": "',
    '", "confidence": 4}',
    "\\begin{pmatrix}",
    "\\end{pmatrix}",
    "&",
    "\\infty",
    "x=",
    " or ",  # the hedge, case and walkthrough readers (issue 34)
    "maybe ",
    "so ",
    "If ",
    "Case 2: ",
    "A) ",
    " correct.",
    " incorrect.",
    " percent",
    "Final Answer: ",
]
BOMBS = [
    "\\boxed{9^{9^{9^{9}}}}",
    "\\boxed{10^{10^{10}}}",
    "\\boxed{{n}^{{n}^{{n}^{{n}^{n}}}}}",
    "\\boxed{99999999!}",
    "\\boxed{10^{999999999}}",
    "\\boxed{2^2^2^2^2^2^2}",
    "\\boxed{((((((((((((((((((((1))))))))))))))))))))}",
    "\\boxed{\\frac{\\frac{\\frac{\\frac{\\frac{\\frac{\\frac{\\frac{\\frac{\\frac{\\frac{1}{2}}{2}}{2}}{2}}{2}}{2}}{2}}{2}}{2}}{2}}{2}}",
    "\\boxed{" + "1" * 500 + "}",
    "\\boxed{" + "x+" * 200 + "x}",
    "\\boxed{\\sqrt{\\sqrt{\\sqrt{\\sqrt{2}}}}^{" + "9" * 7 + "}}",
]


def _surrogates(rng: random.Random, n: int) -> str:
    """Random bytes decoded as a lenient reader would: invalid UTF-8 becomes lone surrogates."""
    return bytes(rng.randrange(256) for _ in range(n)).decode("utf-8", "surrogateescape")


def hostile_outputs(seed: int = 0) -> Iterator[str]:
    """N_OUTPUTS deterministic hostile outputs, cycling through the kinds of attack."""
    rng = random.Random(seed)
    makers: list[Callable[[], str]] = [
        lambda: "".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(1, 400))),
        lambda: rng.choice(FRAGMENTS) * rng.choice((10, 1_000, 50_000, 200_000)),
        lambda: "\\boxed{" * rng.randrange(1, 20_000) + "1" + "}" * rng.randrange(0, 20_000),
        lambda: "{" * rng.randrange(1, 100_000),
        lambda: rng.choice(BOMBS).replace("9", str(rng.randrange(2, 10))),
        lambda: _surrogates(rng, rng.randrange(1, 3_000)),
        lambda: "The answer is \\boxed{" + _surrogates(rng, 40) + "}",
        lambda: str(rng.randrange(10**60)) * rng.randrange(1, 50),
        lambda: "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(1, 2_000))),
        lambda: "x" * 1_000_000 + " The answer is 18",
    ]
    for i in range(N_OUTPUTS):
        # the 1 MB output is built rarely: it only has to be there, not to dominate the run time
        maker = makers[i % (len(makers) - 1)] if i % 1000 else makers[-1]
        yield maker()


class Clock:
    """Per-call wall time and CPU time (this thread's, plus the math worker's)."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, fn: Callable[[], object]) -> object:
        worker0, cpu0, wall0 = checker().worker_cpu_seconds(), time.thread_time(), time.perf_counter()
        result = fn()
        wall, cpu, worker = (
            time.perf_counter() - wall0,
            time.thread_time() - cpu0,
            checker().worker_cpu_seconds(),
        )
        if worker is not None and worker0 is not None and worker >= worker0:  # else: a fresh worker
            cpu += worker - worker0
        self.wall.append(wall)
        self.cpu.append(cpu)
        return result


@pytest.mark.slow
def test_hostile_outputs_never_crash_and_stay_fast() -> None:
    checker().start()  # the worker's one-time start (seconds) is not a grading call
    choices = ("Paris", "London", "Berlin", "Madrid", "Rome", "Oslo", "Bern", "Kyiv", "Riga", "Vienna")
    graders = [(NumericGrader(), "18"), (ChoiceGrader(10, choices), "C"), (MathGrader(), "\\frac{14}{3}")]
    clock = Clock()
    verdicts: dict[str, int] = {}
    for output in hostile_outputs():
        for grader, gold in graders:
            verdict = clock.time(lambda g=grader, o=output, gd=gold: g.grade(o, gd))
            assert verdict in ("correct", "wrong", "unparsable")
            verdicts[str(verdict)] = verdicts.get(str(verdict), 0) + 1
            # numeric and choice grading is canonical() then a comparison; math's grade() skips the
            # canonical form (it compares with the gold first), so that path is timed apart
            if isinstance(grader, MathGrader):
                canonical = clock.time(lambda g=grader, o=output: g.canonical(o))
                assert canonical is None or isinstance(canonical, str)
                if isinstance(canonical, str):
                    canonical.encode("utf-8")  # storable: no lone surrogate survives canonicalisation
    contention = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    print(
        f"\n{len(clock.wall)} grading calls on {N_OUTPUTS} hostile outputs: max CPU {max(clock.cpu) * 1000:.0f} ms, "
        f"max wall {max(clock.wall) * 1000:.0f} ms (contention {contention:.1f}), total wall {sum(clock.wall):.1f} s, "
        f"verdicts {verdicts}"
    )
    assert max(clock.cpu) < PER_CALL_LIMIT_S, f"a grading call used {max(clock.cpu):.2f} s of CPU"
    assert max(clock.wall) < PER_CALL_LIMIT_S * contention, f"a grading call took {max(clock.wall):.2f} s"


def test_a_check_that_overruns_is_killed_and_the_worker_comes_back() -> None:
    """A check that overruns `kill_after` CPU seconds — as a bignum power in C would, where the worker's
    own CPU-time signal cannot land — is killed by the client; the next check gets a fresh, warm child."""
    shared = checker()
    shared.start()
    kills, retries = shared.kills, shared.retries
    start = time.perf_counter()
    # the worker's own limit (30 s) never fires first; the grader's guard would refuse this answer
    assert shared.equivalent("9^{9^{9}}", "5", cpu_limit=30.0, kill_after=0.3) == "timeout"
    assert time.perf_counter() - start < 30.0  # 2 x 0.3 s of CPU, however busy the machine is
    assert (shared.kills, shared.retries) == (kills + 2, retries + 1)  # killed, retried once, killed again
    assert shared.equivalent("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}") == "equal"  # a fresh child


def test_a_check_over_its_cpu_limit_times_out_in_the_worker() -> None:
    """The worker's own CPU-time limit stops a Python-level computation; nothing is killed."""
    shared = checker()
    shared.start()
    kills, retries = shared.kills, shared.retries
    assert shared.equivalent("9^{9^{9}}", "5", cpu_limit=0.05, kill_after=20.0) == "timeout"
    assert (shared.kills, shared.retries) == (kills, retries + 1)
    assert shared.equivalent("1", "1") == "equal"
