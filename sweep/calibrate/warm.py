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

A parameter is scored on the rows it can move, which keeps each step cheap: a member's skill on a
benchmark and its spread there on that benchmark's rows that seat the member; its calibration,
(model v5) self-knowledge, (model v6) habit and (model v8) echo on every row that seats it, and
(model v7) its insight on those of them that debate; a benchmark's item spread and misconception on
that benchmark's rows; the debate dynamics on the rows that debate (`fixed`).
Common random numbers (the same seeds and items every time) make each score a deterministic function
of the values, so a grid comparison is meaningful — and a row's result a function of the values of
the parameters that move it (`_moves`), so each row is run once per distinct set of those values: a
grid's point at the current value, and each pass's closing score of every fit row, come from what
was already run."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence

from actors.populations import Population
from sweep.calibrate.evaluate import Evaluator, MakeBackend, RowResult, row_method
from sweep.calibrate.space import DIGITS, population_of, space
from sweep.calibrate.targets import Row, Targets

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


def _rows_of(name: str, rows: Sequence[Row], bench_of: Mapping[str, str]) -> list[Row]:
    """The fit rows parameter `name` can move (see the module docstring)."""
    kind, _, rest = name.partition(".")
    if kind in ("skill", "spread"):
        member, _, bench = rest.partition(".")
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
    if kind == "spread":
        return member in row.agents and bench_of[row.dataset] == bench
    if kind in MEMBER_WIDE:
        return rest in row.agents
    if kind == "insight":
        return rest in row.agents and row_method(row, {}).router is not None
    if kind == "dynamics":
        return row_method(row, {}).router is not None
    return bench_of[row.dataset] == rest  # item_spread / misconception


def _pairs(dims: Mapping[str, object]) -> list[tuple[str, str]]:
    """The parameters moved together: each member's (skill, spread) on each benchmark."""
    skills = [k.partition(".")[2] for k in dims if k.startswith("skill.")]
    return [(f"skill.{s}", f"spread.{s}") for s in skills if f"spread.{s}" in dims]


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
        grids = []
        for name in names:
            d, h = dims[name], step * (dims[name].high - dims[name].low)
            grids.append(
                sorted({min(d.high, max(d.low, current[name] + i * h)) for i in range(-reach, reach + 1)})
            )
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
            d = dims[name]
            edged += x != current[name] and x in (grid[0], grid[-1]) and d.low < x < d.high
            current[name] = x
        return edged

    order = [k for k in dims if not k.startswith("dynamics.")] + [
        k for k in dims if k.startswith("dynamics.")
    ]
    pairs = [list(pair) for pair in _pairs(dims)] if joint_moves else []
    for step, reach in PASSES:
        todo = [([name], reach) for name in order] + [(pair, 1) for pair in pairs]
        for repeat in range(EDGE_REPEATS + 1):
            # A repeat moves on only what stopped at its grid's edge: it goes on in that direction.
            todo = [(names, r) for names, r in todo if move(names, step, r)]
            what = "pass" if repeat == 0 else "repeat"
            note = f"; {len(todo)} moves stopped at their grid's edge" if todo else ""
            say(
                f"start: {what} at step {step:.3f} of each range, objective {evaluate(current, rows):.4g}{note}"
            )
            if not todo:
                break
    return current
