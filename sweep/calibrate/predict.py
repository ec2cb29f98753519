"""A targets file's rows predicted: every runnable row (a learned row only with its checkpoint) on
the fitted population and, beside it, on v1, with the targets' seeds and every item of each dataset."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from actors.populations import Population
from sweep.calibrate.backends import population_backends, v1_backends
from sweep.calibrate.evaluate import Evaluator, RowResult, runnable
from sweep.calibrate.targets import Row, Targets


@dataclass(frozen=True)
class Predictions:
    """The rows run and those skipped (a checkpoint missing), with the population's results and v1's."""

    rows: list[Row]
    skipped: list[Row]
    results: dict[str, RowResult]
    v1: dict[str, RowResult] | None


def predict(
    targets: Targets,
    population: Population | None,
    checkpoints: Mapping[str, str],
    with_v1: bool,
    say: Callable[[str], None],
    split: str | None = None,
    workers: int = 1,
) -> Predictions:
    """Every runnable row (of `split` alone, when given) on `population` (None: on v1 alone) and,
    `with_v1`, on v1 beside it, with the targets' seeds and every item of each dataset."""
    rows = [r for r in targets.rows if split is None or r.split == split]
    run = runnable(rows, checkpoints)
    skipped = [r for r in rows if r not in run]
    evaluator = Evaluator(targets, targets.seeds, None, checkpoints=checkpoints, workers=workers)
    sides = [("v1" if population is None else population.name, population)]
    if with_v1 and population is not None:
        sides.append(("v1", None))
    results = []
    for name, pop in sides:
        say(f"predict: {len(run)} rows x {len(targets.seeds)} seeds on {name}")
        backends = v1_backends(targets) if pop is None else population_backends(pop)
        results.append(evaluator.run(run, backends))
        say(f"predict: {name} done ({evaluator.throughput.rate:.0f} episodes/s)")
    return Predictions(run, skipped, results[0], results[1] if len(results) > 1 else None)
