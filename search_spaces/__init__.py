"""Declarative Optuna search spaces (YAML), one file per method.

A space maps one to one onto Optuna's `suggest_float` / `suggest_int` / `suggest_categorical`:

    method: pear
    params:
      alpha_t: {type: float, low: 0.0, high: 1.0}                  # suggest_float; also log, step
      tau_src: {type: int, low: 1, high: 5}                        # suggest_int; also log, step
      candidates: {choices: [relabel, fresh]}                      # suggest_categorical
      beta: {type: float, low: 0.0, high: 0.9, when: {candidates: fresh}}   # conditional

`when: {param: value}` (or `{param: [v1, v2]}`) suggests a parameter only when every named, earlier
parameter took one of the given values. Parsing checks the structure (`SpaceError`, one line naming
the file, the field and the fix); `sweep.study.spaces.check_method` checks the names and bounds
against the method registry. Nothing here imports Optuna or the debate core: `sample` drives any object with the three `suggest_*` methods.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from common.names import closest

SPACES_DIR = Path(__file__).resolve().parent
Choice = None | bool | int | float | str
_KEYS = {"type", "low", "high", "log", "step", "choices", "when"}
_TOP = {"method", "description", "params"}


class SpaceError(ValueError):
    """A bad search space: one line naming the file, the field and the fix (exit code 2)."""


@dataclass(frozen=True)
class Param:
    """One tuned argument: `kind` is float, int or categorical."""

    name: str
    kind: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple[Choice, ...] = ()
    when: tuple[tuple[str, tuple[Choice, ...]], ...] = ()

    def active(self, chosen: Mapping[str, Any]) -> bool:
        """Whether this parameter is suggested, given the values chosen before it."""
        return all(name in chosen and chosen[name] in values for name, values in self.when)

    def extremes(self) -> list[Any]:
        """The values that bound the parameter: low and high, or every choice."""
        return list(self.choices) if self.kind == "categorical" else [self.low, self.high]


@dataclass(frozen=True)
class SearchSpace:
    method: str
    params: tuple[Param, ...]
    source: str = "<inline>"
    description: str = ""
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(p.name for p in self.params))

    def to_dict(self) -> dict[str, Any]:
        """The space as plain data (the study fingerprint and MLflow's `search_space.json`)."""
        return {
            "method": self.method,
            "params": {p.name: _param_dict(p) for p in self.params},
        }


class Suggester(Protocol):
    """What `sample` needs of an Optuna trial."""

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> float: ...
    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False) -> int: ...
    def suggest_categorical(self, name: str, choices: Any) -> Any: ...


def sample(space: SearchSpace, trial: Suggester) -> dict[str, Any]:
    """Suggest every active parameter in file order; returns the chosen values by name."""
    chosen: dict[str, Any] = {}
    for p in space.params:
        if not p.active(chosen):
            continue
        if p.kind == "categorical":
            chosen[p.name] = trial.suggest_categorical(p.name, list(p.choices))
        elif p.kind == "int":
            assert isinstance(p.low, int) and isinstance(p.high, int)
            chosen[p.name] = trial.suggest_int(p.name, p.low, p.high, step=int(p.step or 1), log=p.log)
        else:
            assert p.low is not None and p.high is not None
            chosen[p.name] = trial.suggest_float(p.name, float(p.low), float(p.high), step=p.step, log=p.log)
    return chosen


def space_names() -> list[str]:
    """The spaces shipped in this package, by name."""
    return sorted(p.stem for p in SPACES_DIR.glob("*.yaml"))


def load_space(ref: str | Path, base_dir: Path | None = None) -> SearchSpace:
    """A space by package name (`pear`) or by path (relative paths against `base_dir`, then the CWD)."""
    path = find_space(ref, base_dir)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise SpaceError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    return parse_space(raw, str(path))


def find_space(ref: str | Path, base_dir: Path | None = None) -> Path:
    """The file of a space given by package name or path (see `load_space`); SpaceError if none."""
    text = str(ref)
    candidates = [SPACES_DIR / f"{text}.yaml"] if "/" not in text and not text.endswith(".yaml") else []
    candidates += [base_dir / text] if base_dir is not None else []
    candidates += [Path(text)]
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise SpaceError(
            f"search_space: {text!r} is neither a file nor a packaged space{closest(text, space_names())}; "
            f"packaged: {', '.join(space_names())}"
        )
    return path


def parse_space(raw: Any, source: str = "<inline>") -> SearchSpace:
    """Validate a space's structure and bounds; SpaceError names the field and the fix."""
    if not isinstance(raw, dict):
        raise SpaceError(f"{source}: the top level must be a mapping with keys method and params")
    unknown = set(raw) - _TOP
    if unknown:
        key = sorted(unknown)[0]
        raise SpaceError(
            f"{source}: unknown key '{key}'{closest(key, sorted(_TOP))}; allowed: method, description, params"
        )
    method, params = raw.get("method"), raw.get("params")
    if not isinstance(method, str) or not method:
        raise SpaceError(
            f"{source}: method: required; give the registered method these params belong to (e.g. pear)"
        )
    if not isinstance(params, dict) or not params:
        raise SpaceError(
            f"{source}: params: required; give a mapping of argument name -> {{type, low, high}} or {{choices}}"
        )
    parsed: list[Param] = []
    for name, spec in params.items():
        parsed.append(_param(str(name), spec, f"{source}: params.{name}", parsed))
    return SearchSpace(method, tuple(parsed), source, str(raw.get("description", "")))


def _param(name: str, spec: Any, where: str, earlier: list[Param]) -> Param:
    if not isinstance(spec, dict):
        raise SpaceError(f"{where}: expected a mapping such as {{type: float, low: 0.0, high: 1.0}}")
    unknown = set(spec) - _KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise SpaceError(
            f"{where}: unknown key '{key}'{closest(key, sorted(_KEYS))}; allowed: {', '.join(sorted(_KEYS))}"
        )
    when = _when(spec.get("when"), where, earlier)
    if "choices" in spec:
        return _categorical(name, spec, where, when)
    kind = spec.get("type")
    if kind not in ("float", "int"):
        raise SpaceError(f"{where}: type must be float or int (or give choices: [...] for a categorical)")
    return _numeric(name, kind, spec, where, when)


def _numeric(name: str, kind: str, spec: dict[str, Any], where: str, when: Any) -> Param:
    """A float or int parameter, with Optuna's own rules on low, high, log and step checked here."""
    low, high, log, step = spec.get("low"), spec.get("high"), spec.get("log", False), spec.get("step")
    numbers = (int,) if kind == "int" else (int, float)
    for key, value in (("low", low), ("high", high)):
        if not isinstance(value, numbers) or isinstance(value, bool):
            raise SpaceError(
                f"{where}: {key} must be {'an integer' if kind == 'int' else 'a number'}, got {value!r}"
            )
    assert low is not None and high is not None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise SpaceError(f"{where}: low and high must be finite, got {low!r} and {high!r}")
    if low > high:
        raise SpaceError(f"{where}: low {low} > high {high}; swap them or fix the bounds")
    if not isinstance(log, bool):
        raise SpaceError(f"{where}: log must be true or false, got {log!r}")
    if log and low <= 0:
        raise SpaceError(f"{where}: log: true needs low > 0, got low {low}; raise low or drop log")
    if step is not None:
        if not isinstance(step, numbers) or isinstance(step, bool) or not 0 < step < math.inf:
            raise SpaceError(
                f"{where}: step must be a positive {'integer' if kind == 'int' else 'number'}, got {step!r}"
            )
        if log and (kind == "float" or step != 1):
            raise SpaceError(f"{where}: step and log: true cannot be combined (Optuna refuses it); drop one")
    if kind == "float":
        return Param(
            name, kind, float(low), float(high), log, None if step is None else float(step), when=when
        )
    return Param(name, kind, int(low), int(high), log, int(step or 1), when=when)


def _categorical(name: str, spec: dict[str, Any], where: str, when: Any) -> Param:
    extra = set(spec) - {"choices", "when", "type"}
    if extra or spec.get("type", "categorical") != "categorical":
        raise SpaceError(
            f"{where}: a categorical takes only choices (and when); remove {sorted(extra) or ['type']}"
        )
    choices = spec["choices"]
    if not isinstance(choices, list) or not choices or len(choices) > 1000:
        raise SpaceError(
            f"{where}: choices must be a non-empty list of at most 1000 values, e.g. [clique, ring]"
        )
    for c in choices:
        if c is not None and not isinstance(c, bool | int | float | str):
            raise SpaceError(
                f"{where}: choice {c!r} is not a scalar; use None, true/false, a number or a string"
            )
        if isinstance(c, float) and not math.isfinite(c):
            raise SpaceError(f"{where}: choice {c!r} is not a finite number; remove it")
    if len({repr(c) for c in choices}) != len(choices):
        raise SpaceError(f"{where}: choices repeat a value; list each once")
    return Param(name, "categorical", choices=tuple(choices), when=when)


def _when(raw: Any, where: str, earlier: list[Param]) -> tuple[tuple[str, tuple[Choice, ...]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise SpaceError(f"{where}: when must be a mapping {{param: value}} of earlier parameters")
    known = {p.name: p for p in earlier}
    out = []
    for name, value in raw.items():
        if name not in known:
            raise SpaceError(
                f"{where}: when names '{name}', which is not a parameter declared above it{closest(str(name), list(known))}; "
                "declare conditions first"
            )
        values = tuple(value) if isinstance(value, list) else (value,)
        ref = known[name]
        if ref.kind == "categorical" and any(v not in ref.choices for v in values):
            raise SpaceError(
                f"{where}: when {name}: {value!r} is not among {name}'s choices {list(ref.choices)}"
            )
        out.append((str(name), values))
    return tuple(out)


def _param_dict(p: Param) -> dict[str, Any]:
    """A parameter as the YAML that declares it (defaults left out)."""
    out: dict[str, Any] = (
        {"choices": list(p.choices)}
        if p.kind == "categorical"
        else {"type": p.kind, "low": p.low, "high": p.high}
    )
    if p.log:
        out["log"] = True
    if p.step is not None and not (p.kind == "int" and p.step == 1):
        out["step"] = p.step
    if p.when:
        out["when"] = {k: list(v) for k, v in p.when}
    return out
