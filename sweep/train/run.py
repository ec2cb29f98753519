"""The one way into a training, whatever its algorithm: `train` (blocking) and `train_async` (inside
a running event loop: a study's trial) set up the tracker, the console and the progress lines, then
await the trainer's program from the table (`sweep.train.trainers`: its module's `run`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from debate.episode import Agent
from sweep import interrupt
from sweep.train.config import TrainSetup
from sweep.train.progress import TrainProgress
from sweep.train.tracking import NullTrainTracker


@dataclass
class TrainOutcome:
    """What a finished training leaves."""

    policy: Path  # the final policy file
    digest: str  # its content hash
    history: list[dict[str, float]]
    resumed_from: int  # updates already done when this run started
    run_id: str | None = None
    best: Path | None = None  # the policy of the best evaluation (by eval.return), when evaluated


def train(
    setup: TrainSetup,
    agents: Mapping[str, Agent],
    tracker: Any = None,
    console: Console | None = None,
    on_update: Callable[[list[dict[str, float]]], bool] | None = None,
    progress: TrainProgress | None = None,
) -> TrainOutcome:
    """Train (or resume training) the setup's policy on `agents`; after each update `on_update` sees
    every update's metrics so far and may return True to stop early (a study's pruner). `progress`
    prints the progress lines (default: on `console`, as often as the base sweep's
    `progress_every_s`)."""
    return interrupt.run(train_async(setup, agents, tracker, console, on_update, progress))


async def train_async(
    setup: TrainSetup,
    agents: Mapping[str, Agent],
    tracker: Any = None,
    console: Console | None = None,
    on_update: Callable[[list[dict[str, float]]], bool] | None = None,
    progress: TrainProgress | None = None,
) -> TrainOutcome:
    """`train` inside a running event loop (a study's trial)."""
    tracker, console = tracker or NullTrainTracker(), console or Console(stderr=True)
    progress = progress or TrainProgress(console, setup.updates, setup.base.progress_every_s)
    program = setup.trainer.programs().run
    async with progress.beating():
        return await program(setup, progress.meter.metered(agents), tracker, console, on_update, progress)
