"""Answer-format blocks for prompts, per benchmark kind (or benchmark), as data for `debate.prompts`.

Two styles, quoted from the papers:
- `pear`: PEAR appendix E.7, the task-type line and answer format that open the PROBLEM block, for an
  answer given in the JSON `answer` field (E.7.1 GSM8K, E.7.2 MMLU-Pro, E.7.3 MATH-500, E.7.4 TruthfulQA).
- `rumad`: RUMAD Table 7, a `\\boxed{}` answer at the end of the response (MMLU & GPQA, GSM8K).
Where a paper has no block for a kind, the block is ours, written the same way, and marked so below:
PEAR's generic `choice` block is E.7.2 without the benchmark name; RUMAD has no math block.
"""

from __future__ import annotations

from data.types import AnswerKind

STYLES = ("pear", "rumad")
KINDS: tuple[AnswerKind, ...] = ("numeric", "choice", "math")

# PEAR E.7: (task type, answer format) per kind, then benchmark-specific task names.
PEAR_TASKS: dict[str, tuple[str, str]] = {
    "numeric": (
        "grade-school math",
        "provide only the final numeric value in the JSON answer field. Do not include units, commas, or "
        "explanatory text in the answer field.",
    ),
    "choice": (
        "multiple-choice",
        "provide only the letter of the best option in the JSON answer field. Valid letters are those shown "
        "in Options.",
    ),
    "math": (
        "competition math",
        "provide only the final mathematical expression in the JSON answer field, in the form requested by "
        "the problem.",
    ),
}
PEAR_BENCHMARKS: dict[str, tuple[str, str]] = {
    "gsm8k": ("GSM8K grade-school math", PEAR_TASKS["numeric"][1]),
    "arith": ("GSM8K grade-school math", PEAR_TASKS["numeric"][1]),  # ours: arith is GSM8K-shaped
    "math500": ("MATH-500 competition math", PEAR_TASKS["math"][1]),
    "math_hard": ("MATH-Hard competition math", PEAR_TASKS["math"][1]),  # ours, after E.7.3
    "mmlu_pro": ("MMLU-Pro multiple-choice", PEAR_TASKS["choice"][1]),
    "mmlu": ("MMLU multiple-choice", PEAR_TASKS["choice"][1]),  # ours, after E.7.2
    "gpqa_main": ("GPQA multiple-choice", PEAR_TASKS["choice"][1]),  # ours, after E.7.2
    "gpqa_diamond": ("GPQA multiple-choice", PEAR_TASKS["choice"][1]),  # ours, after E.7.2
    "truthfulqa": (
        "TruthfulQA multiple-choice",
        "provide only the letter of the most truthful option in the JSON answer field.",
    ),
}

# RUMAD Table 7 (the paper's `{{answer}}` is a format-string escape for `{answer}`).
RUMAD_BLOCKS: dict[str, str] = {
    "choice": "Put your final choice in the form \\boxed{answer} at the end of your response.",
    "numeric": (
        "Your final answer should be a single numerical number, in the Form \\boxed{answer}, at the end of "
        "your response."
    ),
    # ours: RUMAD evaluates no math benchmark; worded like its GSM8K block
    "math": (
        "Your final answer should be a single mathematical expression in LaTeX, in the Form \\boxed{answer}, "
        "at the end of your response."
    ),
}
_KIND_OF = {
    "gsm8k": "numeric",
    "arith": "numeric",
    "math500": "math",
    "math_hard": "math",
    "mmlu": "choice",
    "mmlu_pro": "choice",
    "gpqa_main": "choice",
    "gpqa_diamond": "choice",
    "truthfulqa": "choice",
}


def pear_task(kind: str) -> tuple[str, str]:
    """PEAR's (task type, answer format) for an answer kind or a benchmark name."""
    if kind in PEAR_BENCHMARKS:
        return PEAR_BENCHMARKS[kind]
    if kind in PEAR_TASKS:
        return PEAR_TASKS[kind]
    raise ValueError(_unknown(kind))


def format_block(kind: str, style: str = "pear") -> str:
    """The answer-format block for an answer kind ('numeric', 'choice', 'math') or a benchmark name.

    `pear`: 'Task type: <task>. Answer format: <format>' (E.7, without its Problem/Options lines, which
    the prompt adds); `rumad`: the Table 7 sentence.
    """
    if style == "pear":
        task, answer_format = pear_task(kind)
        return f"Task type: {task}. Answer format: {answer_format}"
    if style == "rumad":
        base = _KIND_OF.get(kind, kind)
        if base not in RUMAD_BLOCKS:
            raise ValueError(_unknown(kind))
        return RUMAD_BLOCKS[base]
    raise ValueError(f"unknown format style {style!r}; known: {', '.join(STYLES)}")


def _unknown(kind: str) -> str:
    return f"no answer format for {kind!r}; known kinds: {', '.join(KINDS)}; benchmarks: {', '.join(sorted(_KIND_OF))}"
