"""Targets files (`calibration/<paper>.yaml`, schema in calibration/README.md): a paper's published rows,
`fit` (a population is fitted to them) and `predict` (only ever predicted), read into `Targets`. Every
problem is a `TargetsError`: one line naming the file, the field path (`fit[3].method`) and the fix."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from actors.registry import check_engine_args
from debate.methods import METHODS, build_method
from debate.spec import closest
from sweep.config.errors import FIXES, ConfigError, validation_line
from sweep.config.fields import Large, NoBool, Price, Seed, Small
from sweep.config.sweep import DatasetSpec
from sweep.config.yaml_limits import MAX_BYTES, load_text

FIT_KINDS = ("cot", "cot_sc", "vote", "consistency", "silent")  # and `fixed` with a FIT_TOPOLOGIES topology
FIT_TOPOLOGIES = ("clique", "zero")
FIT_ONLY = "fit rows are single agents, consistency, vote, zero or clique; move it to predict"

# Finite numbers from 0 (`true`, "3" are not): percent, percent of a reference row, k tokens per task.
Percent = Annotated[float, NoBool, Field(ge=0.0, le=100.0, allow_inf_nan=False)]
CostPercent = Annotated[float, NoBool, Field(ge=0.0, le=1000.0, allow_inf_nan=False)]
KTokens = Annotated[float, NoBool, Field(ge=0.0, le=1e6, allow_inf_nan=False)]
Text = Annotated[str, Field(min_length=1, max_length=2000, strict=True)]
Key = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)]  # members, dataset keys
_FIX = {"string_pattern_mismatch": "; use letters, digits, '_' and '-' only", "literal_error": " or drop it"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Member(_Strict):
    model: Text | None = None  # the real model's name, for people
    price_in: Price = 0.0  # per million prompt tokens
    price_out: Price = 0.0  # per million completion tokens
    tokens_median: Large | None = None  # a full reply's completion tokens
    tokens_q95: Large | None = None
    calibration: Annotated[float, NoBool, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | None = None


class _Row(_Strict):
    label: Text
    dataset: Text
    method: Any  # a name or {name, args}: checked by building it
    agents: list[Text] | None = Field(None, min_length=1)
    rounds: Small | None = None
    acc: Percent
    std: Percent | None = None
    cost: CostPercent | None = None  # percent of the cost_reference row's cost on the same dataset
    tokens: KTokens | None = None
    where: Text
    needs: Literal["checkpoint"] | None = None


class _Unavailable(_Strict):
    label: Text
    where: Text
    reason: Text


class _File(_Strict):
    paper: Text
    population: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=100, strict=True)]
    members: dict[Key, _Member] = Field(min_length=1)
    agents: list[Text] = Field(min_length=1)
    rounds: Small
    seeds: list[Seed] = Field(min_length=1)
    cost_reference: Text | None = None
    datasets: dict[Key, DatasetSpec] = Field(min_length=1)
    v1: dict[Text, dict[Text, Any]] = Field(default_factory=dict)
    order: list[Key] = Field(default_factory=list, min_length=2)  # members, best first (README)
    fit: list[_Row] = Field(min_length=1)
    predict: list[_Row] = Field(default_factory=list)
    unavailable: list[_Unavailable] = Field(default_factory=list)


_LEVEL: dict[str, Any] = {"fit": _Row, "predict": _Row, "members": _Member, "datasets": DatasetSpec}


class TargetsError(ConfigError):
    """A targets file that cannot be used: one line naming the file, the field and the fix (exit 2)."""


class _Bad(Exception):
    """A problem at a field path; `load_targets` adds the file's name."""


@dataclass(frozen=True)
class Row:
    """One published row: `acc`/`std` in percent, `cost` in percent of the dataset's reference row,
    `tokens` in thousand tokens per task; `agents`/`rounds` default to the file's team and rounds."""

    label: str
    split: str  # "fit" | "predict"
    dataset: str  # a key of Targets.datasets
    method: dict[str, Any]  # {"name": str, "args": dict}
    agents: tuple[str, ...]
    rounds: int
    acc: float
    std: float | None
    cost: float | None
    tokens: float | None
    where: str
    needs: str | None  # "checkpoint": a learned row, run only once a trained policy is given

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.label}"


@dataclass(frozen=True)
class Targets:
    """A whole targets file, checked; `digest` is the first 16 hex digits of its bytes' sha256."""

    path: Path
    digest: str
    paper: str
    population: str
    members: dict[str, dict[str, Any]]
    agents: tuple[str, ...]
    rounds: int
    seeds: tuple[int, ...]
    cost_reference: str | None
    datasets: dict[str, dict[str, Any]]
    v1: dict[str, dict[str, Any]]
    rows: tuple[Row, ...]
    unavailable: tuple[dict[str, str], ...]
    order: tuple[str, ...] = ()  # members whose skill keeps this order on every benchmark, best first

    def fit_rows(self) -> list[Row]:
        return [r for r in self.rows if r.split == "fit"]

    def predict_rows(self) -> list[Row]:
        return [r for r in self.rows if r.split == "predict"]

    def reference(self, dataset: str) -> Row | None:
        """The `cost_reference` row on `dataset` (None without one)."""
        return next((r for r in self.rows if r.dataset == dataset and r.label == self.cost_reference), None)


def _line(e: ValidationError) -> str:
    """The first validation error as `field.path: problem; fix`; an unknown key's did-you-mean from
    the keys of its own level."""

    def keys_at(loc: Sequence[Any]) -> list[str]:
        level = _LEVEL.get(str(loc[0]), _Unavailable) if len(loc) > 1 else _File
        return list(level.model_fields)

    return validation_line(e, keys_at, docs="calibration/README.md", fixes={**_FIX, **FIXES})


def _team(where: str, names: Sequence[str], members: dict[str, Any]) -> tuple[str, ...]:
    for i, m in enumerate(names):
        if m not in members:
            raise _Bad(f"{where}[{i}]: '{m}' is not a member{closest(m, list(members))}; declare it first")
    return tuple(names)


def _method(where: str, raw: Any) -> dict[str, Any]:
    """`raw` (a name, or {name, args}) as {"name", "args"}, built once so its arguments are checked."""
    args: Any
    if isinstance(raw, str):
        name, args = raw, {}
    elif isinstance(raw, dict) and set(raw) <= {"name", "args"} and isinstance(raw.get("name"), str):
        name, args = raw["name"], raw.get("args") or {}
    else:
        raise _Bad(f"{where}: give a method name, or {{name: ..., args: {{...}}}} as in a sweep config")
    if name not in METHODS:
        hint = closest(name, sorted(METHODS))
        raise _Bad(f"{where}: unknown method '{name}'{hint}; `sweep list methods` names them")
    if not isinstance(args, dict):
        raise _Bad(f"{where}.args: give a mapping of argument: value")
    try:
        build_method(name, args)
    except (ValueError, TypeError, RecursionError) as e:
        raise _Bad(f"{where}: {' '.join(str(e).split())}; fix the method's args") from None
    return {"name": name, "args": dict(args)}


def _row(where: str, r: _Row, split: str, f: _File) -> Row:
    method = _method(f"{where}.method", r.method)
    topology = method["args"].get("topology", "clique") if method["name"] == "fixed" else None
    if split == "fit" and method["name"] not in FIT_KINDS and topology not in FIT_TOPOLOGIES:
        raise _Bad(f"{where}.method: {method} is not a fit kind; {FIT_ONLY}")
    if r.needs is not None and split == "fit":
        raise _Bad(f"{where}.needs: a fit row cannot wait for a checkpoint; move it to predict")
    if r.dataset not in f.datasets:
        hint = closest(r.dataset, list(f.datasets))
        raise _Bad(f"{where}.dataset: '{r.dataset}' is not a key of datasets{hint}; declare it there")
    agents = _team(f"{where}.agents", r.agents, f.members) if r.agents is not None else tuple(f.agents)
    n = f.rounds if r.rounds is None else r.rounds
    return Row(r.label, split, r.dataset, method, agents, n, r.acc, r.std, r.cost, r.tokens, r.where, r.needs)


def _rows(f: _File) -> tuple[Row, ...]:
    rows: list[Row] = []
    place: dict[str, str] = {}  # row key -> its field path, to name both rows of a duplicate
    for split, items in (("fit", f.fit), ("predict", f.predict)):
        for i, item in enumerate(items):
            row = _row(f"{split}[{i}]", item, split, f)
            if row.key in place:
                raise _Bad(
                    f"{split}[{i}].label: '{row.label}' appears twice in dataset '{row.dataset}' (also "
                    f"{place[row.key]}); give each row its own label"
                )
            place[row.key] = f"{split}[{i}]"
            rows.append(row)
    refs = {r.dataset for r in rows if r.label == f.cost_reference}
    for r in rows:
        if r.cost is not None and r.dataset not in refs:
            fix = "set cost_reference" if f.cost_reference is None else f"add a '{f.cost_reference}' row"
            raise _Bad(f"{place[r.key]}.cost: '{r.dataset}' has no cost_reference row; {fix} or drop it")
    return tuple(rows)


def _targets(f: _File, path: Path, digest: str) -> Targets:
    """`f`'s cross-field checks (names declared, methods built, fit kinds, duplicates), then `Targets`."""
    if f.population == "v1":
        raise _Bad("population: v1 is the engine's own arguments, not a file; name the population")
    if len(set(f.seeds)) != len(f.seeds):
        raise _Bad(f"seeds: {f.seeds} repeats a seed; give distinct seeds such as [0, 1, 2]")
    for name, m in f.members.items():
        if m.tokens_q95 is not None and m.tokens_median is not None and m.tokens_q95 < m.tokens_median:
            raise _Bad(f"members.{name}.tokens_q95: below tokens_median; a q95 is at least the median")
    agents = _team("agents", f.agents, f.members)
    if f.v1 and set(f.v1) != set(f.members):
        raise _Bad(f"v1: give exactly the members' v1 engine args ({', '.join(f.members)}), or drop v1")
    for name, args in f.v1.items():
        try:
            check_engine_args("simulated", name, dict(args))
        except (ValueError, TypeError) as e:
            raise _Bad(f"v1.{name}: {' '.join(str(e).split())}; see `sweep list engines`") from None
    order = _team("order", f.order, f.members)
    for i in (i for i, seat in enumerate(order) if seat in order[:i]):
        raise _Bad(f"order[{i}]: '{order[i]}' appears twice; list each member once, best first")
    return Targets(
        path=path,
        digest=digest,
        paper=f.paper,
        population=f.population,
        members={name: m.model_dump(exclude_none=True) for name, m in f.members.items()},
        agents=agents,
        rounds=f.rounds,
        seeds=tuple(f.seeds),
        cost_reference=f.cost_reference,
        datasets={key: d.model_dump() for key, d in f.datasets.items()},
        v1={name: dict(args) for name, args in f.v1.items()},
        rows=_rows(f),
        unavailable=tuple(u.model_dump() for u in f.unavailable),
        order=order,
    )


def load_targets(path: str | Path) -> Targets:
    """The targets file at `path`, checked; any problem is a one-line `TargetsError`."""
    p = Path(path)
    if not p.is_file():
        kind = "not a regular file" if p.exists() else "not found"
        raise TargetsError(f"{p}: targets file {kind}; give the path of a calibration/<paper>.yaml file")
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as e:
        raise TargetsError(f"{p}: cannot be read ({e.strerror or e}); check its permissions") from None
    if len(data) > MAX_BYTES:
        raise TargetsError(
            f"{p}: larger than {MAX_BYTES:,} bytes; a targets file holds one paper's rows, a few hundred"
        )
    try:  # the configs' loader: a key given twice, an alias bomb or deep nesting is refused
        raw = load_text(data.decode("utf-8-sig"), str(p))
    except UnicodeDecodeError as e:
        raise TargetsError(f"{p}: not UTF-8 text (byte offset {e.start}); save it as UTF-8") from None
    except ConfigError as e:
        raise TargetsError(str(e)) from None
    try:
        return _targets(_File.model_validate(raw), p, hashlib.sha256(data).hexdigest()[:16])
    except ValidationError as e:
        raise TargetsError(f"{p}: {_line(e)}") from None
    except _Bad as e:
        raise TargetsError(f"{p}: {e}") from None
    except (TypeError, RecursionError) as e:  # a shape no validator expected
        raise TargetsError(f"{p}: {type(e).__name__}: {str(e)[:200]}; check the values' types") from None
