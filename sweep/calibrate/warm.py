"""Where a fit starts: a coordinate search from `space.start_values`, each parameter in turn moved
over a small grid and kept where the fit rows it touches score best, so the Optuna study (CMA-ES,
`sweep.calibrate.fit`) refines a population that is already close instead of searching 25 dimensions
from their middles.

With `joint_moves` (`sweep calibrate --joint-moves`), each pass then moves every member's skill and
spread on a benchmark together, over a 3 x 3 grid at the pass's step: one sample's accuracy and a
vote's gain over it ask for them together (a higher spread leaves a vote less to gain, and lowers
one sample's accuracy unless the skill rises with it), a valley along which one-at-a-time moves
stall. Off by default: at CPP's size, where every
such move reruns the debate rows, it makes a pass several times longer, and neither run that used
it fitted PEAR's rows better (docs/calibration/README.md).

From model v9 on, each pass also moves each member's echo on a benchmark with its skill there
re-chosen at every point of echo's grid, on the member's rows there that never debate (a profile:
expected accuracies, cheap). Echo alone lowers a vote toward one sample and leaves one sample where
it was, so the skill that fits both must rise with it; a one-at-a-time move never gets there.

A parameter is scored on the rows it can move, which keeps each step cheap: a member's skill on a
benchmark and its spread there on that benchmark's rows that seat the member; its calibration,
(model v5) self-knowledge, (model v6) habit and (model v8) echo on every row that seats it (v9: echo
on that benchmark's rows that seat it), and
(model v7) its insight on those of them that debate; a benchmark's item spread and misconception on
that benchmark's rows; the debate dynamics on the rows that debate (`fixed`).
Common random numbers (the same seeds and items every time) make each score a deterministic function
of the values, so a grid comparison is meaningful — and a row's result a function of the values of
the parameters that move it (`_moves`), so each row is run once per distinct set of those values: a
grid's point at the current value, and each pass's closing score of every fit row, come from what
was already run."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from optuna.distributions import FloatDistribution

from actors.populations import Population
from sweep.calibrate.evaluate import Evaluator, MakeBackend, RowResult, row_method
from sweep.calibrate.space import DIGITS, population_of, space
from sweep.calibrate.targets import Row, Targets
from sweep.run.progress import duration

# (grid step as a share of the range, steps either side) per pass. The first, coarse pass reaches half
# a range either side: a parameter new to a model version starts at its neutral end (v6's `habit` at 0)
# and must be able to get across its range from there.
PASSES = ((1 / 4, 2), (1 / 8, 1), (1 / 24, 1))
# A move that stopped at the last point of its grid inside the range runs again (up to this many
# times), alone: its best value may lie further out than one pass reaches. Only those moves repeat (a
# whole pass again cost CPP's calibration 14 minutes, docs/calibration/README.md).
EDGE_REPEATS = 3
# A member's fields that move every row seating it (its insight moves only the rows that debate).
MEMBER_WIDE = ("calibration", "self_knowledge", "habit", "echo")
# The profiled move re-chooses its follower to within 0.618 ** 10 (0.8 %) of the span it searches.
GOLDEN_STEPS = 10


def _rows_of(name: str, rows: Sequence[Row], bench_of: Mapping[str, str]) -> list[Row]:
    """The fit rows parameter `name` can move (see the module docstring)."""
    kind, _, rest = name.partition(".")
    member, _, bench = rest.partition(".")
    if bench:  # a member's field on one benchmark: skill, spread, (v9) echo
        return [r for r in rows if member in r.agents and bench_of[r.dataset] == bench]
    if kind in MEMBER_WIDE:
        return [r for r in rows if rest in r.agents]
    if kind == "insight":
        return [r for r in rows if rest in r.agents and r.method.get("name") == "fixed"]
    if kind == "dynamics":
        return [r for r in rows if r.method.get("name") == "fixed"]
    return [r for r in rows if bench_of[r.dataset] == rest]  # item_spread / misconception


def _moves(name: str, row: Row, bench_of: Mapping[str, str], order: Sequence[str]) -> bool:
    """Whether parameter `name` can change `row`'s result: a superset of `_rows_of` (an ordered
    member's skill can reorder the others' on its benchmark; the dynamics move every row that debates)."""
    kind, _, rest = name.partition(".")
    member, _, bench = rest.partition(".")
    if kind == "skill":
        seated = member in row.agents or (member in order and bool(set(order) & set(row.agents)))
        return seated and bench_of[row.dataset] == bench
    if bench:  # another member field on one benchmark: spread, (v9) echo
        return member in row.agents and bench_of[row.dataset] == bench
    if kind in MEMBER_WIDE:
        return rest in row.agents
    if kind == "insight":
        return rest in row.agents and row_method(row, {}).router is not None
    if kind == "dynamics":
        return row_method(row, {}).router is not None
    return bench_of[row.dataset] == rest  # item_spread / misconception


def _pairs(dims: Mapping[str, object], other: str = "spread") -> list[tuple[str, str]]:
    """Each member's (skill, `other`) on each benchmark, where the space has both."""
    skills = [k.partition(".")[2] for k in dims if k.startswith("skill.")]
    return [(f"skill.{s}", f"{other}.{s}") for s in skills if f"{other}.{s}" in dims]


def _grid(d: FloatDistribution, at: float, h: float, reach: int) -> list[float]:
    """`at` and `reach` points either side `h` apart, clipped to `d`'s range."""
    return sorted({min(d.high, max(d.low, at + i * h)) for i in range(-reach, reach + 1)})


def _edged(d: FloatDistribution, at: float, x: float, grid: Sequence[float]) -> bool:
    """Whether a move from `at` stopped at `x`, its grid's last point inside `d`'s range."""
    return x != at and x in (grid[0], grid[-1]) and d.low < x < d.high


def _least(f: Callable[[float], float], low: float, high: float, steps: int = GOLDEN_STEPS) -> float:
    """Where on [low, high] a unimodal `f` is least, to within 0.618 ** steps of the width (a
    golden-section search: steps + 2 calls of `f`)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return c if fc <= fd else d


def warm_start(
    targets: Targets,
    evaluator: Evaluator,
    backends: Callable[[Population], MakeBackend],
    values: dict[str, float],
    score: Callable[[Sequence[Row], Mapping[str, RowResult]], float],
    say: Callable[[str], None],
    joint_moves: bool = False,
) -> dict[str, float]:
    """`values` improved parameter by parameter, and with `joint_moves` pair by pair (see the module
    docstring). `score(rows, results)` is the fit's objective on `rows`, given each row's result by key."""
    rows = list(targets.fit_rows())
    bench_of = {key: str(entry["name"]) for key, entry in targets.datasets.items()}
    dims = space(targets)
    current = dict(values)

    moved_by = {r.key: [k for k in dims if _moves(k, r, bench_of, targets.order)] for r in rows}
    seen: dict[tuple[str, tuple[float, ...]], RowResult] = {}

    def evaluate(vals: Mapping[str, float], subset: Sequence[Row]) -> float:
        keys = {r.key: (r.key, tuple(round(vals[k], DIGITS) for k in moved_by[r.key])) for r in subset}
        missing = [r for r in subset if keys[r.key] not in seen]
        if missing:
            got = evaluator.run(missing, backends(population_of(vals, targets)))
            seen.update({keys[r.key]: got[r.key] for r in missing})
        return score(subset, {r.key: seen[keys[r.key]] for r in subset})

    def move(names: Sequence[str], step: float, reach: int) -> int:
        """Moves `names` together to the best point of their grid; returns how many of them stopped
        at their grid's last point inside their range (a best value may lie further out)."""
        keys = {r.key for n in names for r in _rows_of(n, rows, bench_of)}
        subset = [r for r in rows if r.key in keys]
        if not subset:
            return 0
        grids = [_grid(dims[n], current[n], step * (dims[n].high - dims[n].low), reach) for n in names]
        scored = []
        for point in itertools.product(*grids):
            trial = {**current, **dict(zip(names, point, strict=True))}
            shares = (
                abs(x - current[n]) / (dims[n].high - dims[n].low) for n, x in zip(names, point, strict=True)
            )
            scored.append((evaluate(trial, subset), sum(shares), point))
        best = min(scored)[2]  # ties keep the point nearest the current one
        edged = 0
        for name, x, grid in zip(names, best, grids, strict=True):
            edged += _edged(dims[name], current[name], x, grid)
            current[name] = x
        return edged

    def profile(name: str, follower: str, step: float, reach: int) -> int:
        """Moves `name` over its grid as `move` does, each point with `follower` first re-chosen on the
        rows among `name`'s that never debate (expected accuracies: cheap), within as many of the
        pass's steps of its own range as `name`'s grid reaches (a golden-section search, kept only
        where it beats the current value); returns 1 if `name` stopped at its grid's last point inside
        its range."""
        subset = _rows_of(name, rows, bench_of)
        if not subset:
            return 0
        quiet = [r for r in subset if row_method(r, {}).rounds == 0]
        d, f = dims[name], dims[follower]
        width, f_width = d.high - d.low, f.high - f.low
        grid = _grid(d, current[name], step * width, reach)
        f_low = max(f.low, current[follower] - reach * step * f_width)
        f_high = min(f.high, current[follower] + reach * step * f_width)

        def near(y: float) -> float:  # ties keep the point nearest the current one
            return abs(y - current[follower]) / f_width

        scored = []
        for x in grid:
            trial = {**current, name: x}
            y = current[follower]
            if quiet:
                fits = lambda y, at=trial: evaluate({**at, follower: y}, quiet)  # noqa: E731
                y = min((_least(fits, f_low, f_high), y), key=lambda y: (fits(y), near(y)))
            trial[follower] = y
            scored.append((evaluate(trial, subset), abs(x - current[name]) / width + near(y), x, y))
        _, _, x, y = min(scored)
        edged = _edged(d, current[name], x, grid)
        current[name], current[follower] = x, y
        return int(edged)

    order = [k for k in dims if not k.startswith("dynamics.")] + [
        k for k in dims if k.startswith("dynamics.")
    ]
    pairs = _pairs(dims) if joint_moves else []
    # v9: a member's echo on a benchmark moves with its skill there re-chosen to keep its one-sample
    # and vote rows (echo alone lowers the vote toward one sample, and the skill must rise with it).
    profiles = [(echo, skill) for skill, echo in _pairs(dims, "echo")]
    for step, reach in PASSES:
        todo: list[Callable[[], int]] = [partial(move, [name], step, reach) for name in order]
        todo += [partial(move, list(pair), step, 1) for pair in pairs]
        todo += [partial(profile, echo, skill, step, reach) for echo, skill in profiles]
        for repeat in range(EDGE_REPEATS + 1):
            # A repeat moves on only what stopped at its grid's edge: it goes on in that direction.
            began, moves = time.monotonic(), len(todo)
            todo = [m for m in todo if m()]
            what = "pass" if repeat == 0 else "repeat"
            note = f"; {len(todo)} moves stopped at their grid's edge" if todo else ""
            took = f"{moves} moves in {duration(time.monotonic() - began)}"
            say(
                f"start: {what} at step {step:.3f} of each range ({took}), objective "
                f"{evaluate(current, rows):.4g}{note}"
            )
            if not todo:
                break
    return current
