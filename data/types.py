"""The one `Sample` type every benchmark loads into, and the grading verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Verdict = Literal["correct", "wrong", "unparsable"]
AnswerKind = Literal["numeric", "choice", "math"]


@dataclass(frozen=True)
class Sample:
    """One benchmark item. `gold` is canonical for its `kind` (a number string, a letter, LaTeX)."""

    id: str
    question: str
    gold: str
    kind: AnswerKind
    choices: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


class Grader(Protocol):
    """Turns model output into a canonical answer and grades it against the gold."""

    kind: AnswerKind

    def canonical(self, output: str) -> str | None:
        """The canonical answer in `output`, or None when none can be read."""
        ...

    def grade(self, output: str, gold: str) -> Verdict: ...
