"""Bounded field types for the configs: every number has a range, `true` or "3" is never a number, and
no float is infinite or NaN (a seed of 2**70 or `num_cpus: .inf` is refused, not overflowed)."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

SEED_MAX = 2**32 - 1  # seeds reach numpy and engines, which take 32 or 64 bits


def _number_only(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {str(v).lower()}; write the number itself")
    if isinstance(v, str):
        raise ValueError(f"expected a number, got the text {v[:40]!r}; write the number unquoted")
    return v


NoBool = BeforeValidator(_number_only)

# Integers are strict: no true, no "3", no 3.5.
Small = Annotated[int, Field(ge=1, le=1024, strict=True)]  # replicas, agents per entry, parallel trials
Large = Annotated[int, Field(ge=1, le=10_000_000, strict=True)]  # limits, concurrency, tokens, trials
Offset = Annotated[int, Field(ge=0, le=10_000_000, strict=True)]
Rounds = Annotated[int, Field(ge=0, le=1000, strict=True)]
Cpus = Annotated[int, Field(ge=1, le=4096, strict=True)]
Seed = Annotated[int, Field(ge=0, le=SEED_MAX, strict=True)]
# Floats: finite, integers accepted, booleans not.
Resource = Annotated[float, NoBool, Field(ge=0.0, le=4096.0, allow_inf_nan=False)]  # GPUs/CPUs per replica
Price = Annotated[float, NoBool, Field(ge=0.0, le=1e6, allow_inf_nan=False)]  # per million tokens
Temperature = Annotated[float, NoBool, Field(ge=0.0, le=100.0, allow_inf_nan=False)]
TopP = Annotated[float, NoBool, Field(gt=0.0, le=1.0, allow_inf_nan=False)]
Seconds = Annotated[float, NoBool, Field(gt=0.0, le=1e7, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=200)]


def _plain_name(v: str) -> str:
    bad = [c for c in v if c in "/\\" or unicodedata.category(c) == "Cc"]
    if bad or v in (".", "..") or not v.strip():
        what = f"holds {bad[0]!r}" if bad else f"is {v!r}"
        raise ValueError(
            f"{what}; the name labels the MLflow run and names files: give a plain name such as "
            "my-study (no '/', '\\', control characters, not '.' or '..')"
        )
    return v


# A name that also names files (a training's, a study's: its lock file): one plain path component.
PlainName = Annotated[str, Field(min_length=1, max_length=100, strict=True), AfterValidator(_plain_name)]
