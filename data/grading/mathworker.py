"""The math-verify worker: a separate process that compares two LaTeX answers under a CPU-time limit.

Run by `data.grading.mathcheck` as `python -I` on this file; it imports only the standard library and
math-verify (so no project module, nor the caller's working directory, can shadow one). The process is
a *zygote*: it imports math-verify (seconds) and warms sympy's lazy imports once, then forks a child
that serves requests. The parent kills a child that overruns; the zygote then forks a fresh, already
warm child in milliseconds. A child runs one untimed check before it announces itself: its first
touches of the inherited heap (copy-on-write page faults, CPU time the check would be charged) happen
there, so the CPU limit applies to the check alone. Each child caps its address space, so a runaway
bignum fails with MemoryError instead of eating the machine.

Protocol, one JSON object per line: the child announces `{"ready": <pid>}`; a request
`{"seq", "answer", "gold", "cpu_limit"}` gets `{"seq", "result"}` with result one of "equal", "different",
"unparsed" (the answer is no math), "gold_unparsed", "timeout" (CPU limit) or "error".
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import signal
import sys
from typing import Any

CPU_LIMIT_S = 0.5  # per check, unless the request names its own `cpu_limit`
EXTRA_MEMORY = 1 << 30  # address space a child may add to what the warm zygote already maps
WARM_UP = [  # (answer, gold) pairs touching the constructs MATH answers use, so children start warm
    ("\\frac{1}{2}", "0.5"),
    ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"),
    ("(3,\\frac{\\pi}{2})", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("[1,2)", "(1,2]"),
    ("\\{1,2\\}", "1,2"),
    ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix}1\\\\3\\end{pmatrix}"),
    ("x=3", "3"),
    ("6-5i", "6 - 5i"),
    ("50\\%", "0.5"),
    ("x^2+2x+1", "(x+1)^2"),
    ("30^\\circ", "\\frac{\\pi}{6}"),
    ("x \\in [2, 5)", "[2,5)"),
    ("y \\le 3", "3 \\ge y"),
]


CHILD_WARM_UP = WARM_UP[1:6]


class CpuLimit(BaseException):
    """Raised by SIGPROF when a check overruns; a BaseException, so `except Exception` can't swallow it."""


def check(answer: str, gold: str) -> str:
    """Compare two answers (LaTeX without $ signs) with math-verify; no time limit of its own."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    config = [LatexExtractionConfig(), ExprExtractionConfig()]
    gold_parsed = parse("\\boxed{" + gold + "}", extraction_config=config, parsing_timeout=None)
    if not gold_parsed:
        return "gold_unparsed"
    answer_parsed = parse("\\boxed{" + answer + "}", extraction_config=config, parsing_timeout=None)
    if not answer_parsed:
        return "unparsed"
    return "equal" if verify(gold_parsed, answer_parsed, timeout_seconds=None) else "different"


def _on_sigprof(signum: int, frame: Any) -> None:
    raise CpuLimit


def _write(obj: dict[str, Any]) -> None:
    # One short line per write: under PIPE_BUF, so a reply is never interleaved with a sibling's.
    sys.stdout.write(json.dumps(obj)[:3000] + "\n")
    sys.stdout.flush()


def _answer(request: dict[str, Any]) -> str:
    """The result for one request, the CPU limit armed around the check (and re-firing if swallowed)."""
    limit = request.get("cpu_limit")
    signal.setitimer(
        signal.ITIMER_PROF, float(limit) if isinstance(limit, (int, float)) else CPU_LIMIT_S, 0.05
    )
    try:
        return check(str(request["answer"]), str(request["gold"]))
    except CpuLimit:
        return "timeout"
    except Exception:  # sympy and the LaTeX parser raise anything on odd input: never a crash
        return "error"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _cap_memory() -> None:
    """Limit the child's address space to what it maps now plus EXTRA_MEMORY (Linux; best effort)."""
    try:
        with open(f"/proc/{os.getpid()}/statm") as fh:
            mapped = int(fh.read().split()[0]) * resource.getpagesize()
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = mapped + EXTRA_MEMORY if hard == resource.RLIM_INFINITY else min(mapped + EXTRA_MEMORY, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (OSError, ValueError):
        pass  # no /proc, or the platform refuses RLIMIT_AS: the CPU limit still holds


def serve() -> None:
    """A child's life: cap memory, warm up, announce itself, answer requests until stdin closes."""
    _cap_memory()
    for answer, gold in CHILD_WARM_UP:  # untimed: the copy-on-write faults of a fresh child land here
        with contextlib.suppress(Exception):
            check(answer, gold)
    signal.signal(signal.SIGPROF, _on_sigprof)
    _write({"ready": os.getpid()})
    for line in sys.stdin:
        try:
            request = json.loads(line)
            result = _answer(request)
        except CpuLimit:  # a late re-fire of the timer between checks
            result = "timeout"
        except Exception:
            request, result = {}, "error"
        _write({"seq": request.get("seq"), "result": result})


def main() -> None:
    """Warm up, then keep one serving child alive until a child exits cleanly (stdin closed)."""
    for answer, gold in WARM_UP:
        # warming is best effort: a failure here only makes a child's first check slower
        with contextlib.suppress(Exception):
            check(answer, gold)
    gc.collect()
    gc.freeze()  # the warm heap is shared with every child: the collector no longer writes to its pages
    while True:
        pid = os.fork()
        if pid == 0:
            try:
                serve()
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return  # the parent closed our stdin: done


if __name__ == "__main__":
    main()
