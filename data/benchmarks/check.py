"""The gold check: load a benchmark and grade its own gold answers, which must all grade correct.

Per item it grades the gold answer; the gold *solution* text where the file has one (GSM8K's answer
field, MATH's solution with its `\\boxed{}`); and, for multiple choice, the correct option's *text*
(an answer given as text must map back to the gold letter) — skipped, and counted, where that text
is not unique among the item's options or is itself a bare letter. An item is correct when every one
of its checks is. An unparsable verdict carries its reason ('timeout' when the math check ran out of
CPU time twice, apart from 'no answer' and the rest). Failures are reported by item id only: no
question text is ever printed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from data.benchmarks.options import LETTERS
from data.benchmarks.registry import benchmark_info, split_items
from data.grading.choice import normalize_option
from data.grading.graders import grader_for
from data.types import Sample, Verdict

_RANK: dict[Verdict, int] = {"correct": 0, "unparsable": 1, "wrong": 2}


@dataclass
class CheckReport:
    """What a gold check found: one verdict per item, and the failing (item id, check, verdict)s."""

    benchmark: str
    split: str
    verdicts: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)  # how many texts each kind of check graded
    skipped: Counter[str] = field(default_factory=Counter)  # checks not applicable, by kind
    reasons: Counter[str] = field(default_factory=Counter)  # why checks were unparsable ('timeout', ...)
    failures: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return sum(self.verdicts.values())

    @property
    def ok(self) -> bool:
        return self.n > 0 and self.verdicts["correct"] == self.n

    def summary(self) -> str:
        """'1319 records: 1319 correct, 0 wrong, 0 unparsable'; unparsable checks' reasons in brackets
        ('... 2 unparsable (no answer 1, timeout 1)')."""
        v = self.verdicts
        line = f"{self.n} records: {v['correct']} correct, {v['wrong']} wrong, {v['unparsable']} unparsable"
        if self.reasons:
            line += " (" + ", ".join(f"{reason} {n}" for reason, n in sorted(self.reasons.items())) + ")"
        return line

    def details(self) -> str:
        """Which checks ran over how many texts, and which were skipped."""
        ran = ", ".join(f"{kind} {n}" for kind, n in self.checks.items())
        skipped = ", ".join(f"{kind} {n}" for kind, n in self.skipped.items())
        return f"graded: {ran}" + (f"; skipped: {skipped}" if skipped else "")


def gold_texts(sample: Sample) -> Iterator[tuple[str, str | None]]:
    """(check name, text that must grade correct; None: not applicable) for one item."""
    yield "gold answer", sample.gold
    solution = sample.metadata.get("solution")
    if sample.kind in ("numeric", "math") and isinstance(solution, str):
        yield "solution", solution
    if sample.kind == "choice" and sample.choices:
        text = sample.choices[LETTERS.index(sample.gold)]
        said = normalize_option(text)
        unique = said and [normalize_option(c) for c in sample.choices].count(said) == 1
        core = said.strip("()[].: ")
        letter_like = len(core) == 1 and core.isascii() and core.isalpha()  # 'a' would read as option A
        yield "option text", text if unique and not letter_like else None


def check_samples(
    name: str, split: str, samples: list[Sample], progress: Callable[[int], None] | None = None
) -> CheckReport:
    """Grade every gold text of `samples` (see the module doc)."""
    report = CheckReport(name, split)
    for i, sample in enumerate(samples):
        grader = grader_for(sample)
        worst: Verdict = "correct"
        for check, text in gold_texts(sample):
            if text is None:
                report.skipped[check] += 1
                continue
            report.checks[check] += 1
            graded = grader.explain(text, sample.gold)
            if graded.verdict == "unparsable":
                report.reasons[graded.reason] += 1
            if graded.verdict != "correct":
                shown = f"{graded.verdict} ({graded.reason})" if graded.reason else graded.verdict
                report.failures.append((sample.id, check, shown))
            worst = max(worst, graded.verdict, key=_RANK.__getitem__)
        report.verdicts[worst] += 1
        if progress is not None:
            progress(i + 1)
    return report


def check_benchmark(name: str, split: str = "test", path: str | None = None) -> CheckReport:
    """Load `name`'s `split` (from `path` if given) and grade every gold text in it."""
    return check_samples(name, split, split_items(benchmark_info(name), split, path))
