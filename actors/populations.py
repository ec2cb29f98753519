"""Simulated populations as data: `populations/<name>.yaml` names a team's members with their
parameters, each benchmark's difficulty and the debate dynamics the population model (`actors.population`)
reads. A population is content-hashed (`Population.digest`): the digest joins the episode id and the
MLflow params of every episode run on it, so two files that differ in any number never share results.

    version: v2                 # the population model that reads the file
    description: one line
    members:                    # one entry per model of the team (the `member` engine argument)
      grok: {skill: {default: 0.1, math500: -0.2}, spread: 1.2, calibration: 0.8, tokens_median: 160}
    benchmarks:                 # `default` is required; others are dataset names
      default: {item_spread: 1.0, misconception: 0.4}
    dynamics: {persuasion: 0.6, mislead: 0.3, ...}   # optional; omitted keys take the defaults below

`v1` is not a file: it is the original model (`actors.simulated`), configured by the engine's own
arguments, and its episode ids are those the engine arguments already give."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

# Population models a file may name; `v1` is the engine's arguments, not a file.
VERSIONS = ("v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9")
# Dynamics a version reads that earlier ones do not: absent from an earlier version's file and digest.
SINCE = {"verify": "v3"}
# Member fields a version reads that earlier ones do not (absent from an earlier version's file and digest).
MEMBER_SINCE = {"self_knowledge": "v5", "habit": "v6", "insight": "v7", "echo": "v8"}
# Member fields that may give one number per benchmark, and the model version that first reads them so.
PER_BENCH = {"spread": "v4", "echo": "v9"}
HOME = Path(__file__).resolve().parents[1] / "populations"  # the packaged population files
MAX_FILE_BYTES = 1 << 20


class PopulationError(ValueError):
    """A population file or reference that cannot be used (one line naming the field and the fix)."""


@dataclass(frozen=True)
class Member:
    """One model of the team. `skill[b]`: the logit of a sample's hit rate on an item of average difficulty of
    benchmark b (`default` for the others); `spread`: the sd of the member's own per-item competence logit
    (how differently it fares on items of equal difficulty: the larger, the sooner its consistency curve
    flattens; a mapping per benchmark from v4 on); `calibration`: the share of confidences drawn from the
    calibrated distributions; `self_knowledge` (model v5): the share of those whose table (right or wrong)
    follows the sample's own correctness, the rest following how easy the item is for the member (a Bernoulli
    of its competence), so two samples' confidences need not tell which is right; `habit` (v6): the share of
    its wrong samples outside the shared misconception that give its own habitual wrong answer on the item;
    `insight` (v7): the logit its competence gains from reading peers; `echo` (v8): the share of its first
    answers that repeat its one modal answer on the item (a mapping per benchmark from v9 on); `tokens_median`/`tokens_q95`: its full replies'
    completion tokens (a log-normal through both)."""

    skill: Mapping[str, float]
    spread: float | Mapping[str, float] = 1.0
    calibration: float = 0.8
    self_knowledge: float = 1.0  # v5
    habit: float = 0.0  # v6
    insight: float = 0.0  # v7
    echo: float | Mapping[str, float] = 0.0  # v8
    tokens_median: int = 200
    tokens_q95: int = 400

    def skill_on(self, benchmark: str) -> float:
        return float(self.skill.get(benchmark, self.skill["default"]))

    def spread_on(self, benchmark: str) -> float:
        return _on(self.spread, benchmark)

    def echo_on(self, benchmark: str) -> float:
        return _on(self.echo, benchmark)


def _on(value: float | Mapping[str, float], benchmark: str) -> float:
    """A per-benchmark field's number on `benchmark`: one number for all, or its entry (else `default`)."""
    if isinstance(value, Mapping):
        return float(value.get(benchmark, value["default"]))
    return float(value)


@dataclass(frozen=True)
class Bench:
    """One benchmark: `item_spread` is the sd of the item difficulty logit every member shares (it
    correlates the members' errors); `misconception` the probability that a wrong sample gives the
    item's shared misconception rather than a slip of its own."""

    item_spread: float = 1.0
    misconception: float = 0.4


@dataclass(frozen=True)
class Dynamics:
    """How readers update on peers' arguments (see `actors.population` for each mechanism)."""

    persuasion: float = 0.6  # pull of a correct argument on a reader able to check it (its competence)
    mislead: float = 0.3  # pull of a confident wrong argument on a reader unable to check it
    stubbornness: float = 0.3  # share of update calls in which a reader keeps its answer regardless
    reflect: float = 0.2  # with no convincing argument, the chance a reader re-solves from scratch
    context_cost: float = 0.15  # competence logit lost per doubling of peer text past the free amount
    context_free_tokens: int = 600  # peer text (tokens) a reader takes in at no cost
    cut_persuasion: float = 0.5  # how persuasive an argument cut off by an output cap still is
    tokens_per_char: float = 0.25
    verify: float = 0.0  # v3: the share of a correct argument any reader can check, whatever its competence


@dataclass(frozen=True)
class Population:
    name: str
    version: str
    members: Mapping[str, Member]
    benchmarks: Mapping[str, Bench]
    dynamics: Dynamics = field(default_factory=Dynamics)
    description: str = ""

    def bench(self, name: str) -> Bench:
        return self.benchmarks.get(name, self.benchmarks["default"])

    def member(self, name: str) -> Member:
        if name not in self.members:
            raise PopulationError(
                f"args.member: population '{self.name}' has no member '{name}'; it has: {', '.join(self.members)}"
            )
        return self.members[name]

    def content(self) -> dict[str, Any]:
        """The file's content as plain values (what the digest hashes and `dump` writes)."""
        return {
            "version": self.version,
            "description": self.description,
            "members": {k: _member_content(m, self.version) for k, m in self.members.items()},
            "benchmarks": {k: dataclasses.asdict(b) for k, b in self.benchmarks.items()},
            "dynamics": {
                k: v
                for k, v in dataclasses.asdict(self.dynamics).items()
                if SINCE.get(k, "v2") <= self.version
            },
        }

    @property
    def digest(self) -> str:
        """sha256 of the canonical content (the description excluded: rewording changes no episode)."""
        body = {k: v for k, v in self.content().items() if k != "description"}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def dump(self) -> str:
        """The population as YAML text `parse` reads back to an equal population."""
        return yaml.safe_dump(self.content(), sort_keys=False, width=110)


def _member_content(m: Member, version: str) -> dict[str, Any]:
    out = dataclasses.asdict(m) | {"skill": dict(m.skill)}  # one number stays one (it hashes as before)
    out |= {k: dict(getattr(m, k)) for k in PER_BENCH if isinstance(getattr(m, k), Mapping)}
    return {k: v for k, v in out.items() if MEMBER_SINCE.get(k, "v2") <= version}


def _number(where: str, v: Any, low: float, high: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high:
        raise PopulationError(f"{where}: must be a number in [{low:g}, {high:g}], got {v!r}")
    return float(v)


def _section(where: str, raw: Any, cls: type, ranges: Mapping[str, tuple[float, float]]) -> Any:
    if not isinstance(raw, Mapping):
        raise PopulationError(f"{where}: expected a mapping, got {type(raw).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, v in raw.items():
        if key not in names:
            raise PopulationError(f"{where}.{key}: unknown field; known: {', '.join(sorted(names))}")
        if key == "skill" or (key in PER_BENCH and isinstance(v, Mapping)):
            per = v if isinstance(v, Mapping) else {"default": v}
            if "default" not in per:
                raise PopulationError(f"{where}.{key}: needs a 'default' entry")
            bounds = (-8.0, 8.0) if key == "skill" else _MEMBER[key]
            kwargs[key] = {str(b): _number(f"{where}.{key}.{b}", s, *bounds) for b, s in per.items()}
            continue
        low, high = ranges[key]
        kwargs[key] = _number(f"{where}.{key}", v, low, high)
        if isinstance(getattr(cls, key, None), int):  # a token count stays an int (and hashes as one)
            kwargs[key] = int(round(kwargs[key]))
    if cls is Member and "skill" not in kwargs:
        raise PopulationError(f"{where}.skill: required")
    return cls(**kwargs)


_SHARE = (0.0, 1.0)
_MEMBER: dict[str, tuple[float, float]] = {"spread": (0, 6), "insight": (0, 4)}
_MEMBER |= dict.fromkeys(("calibration", "self_knowledge", "habit", "echo"), _SHARE)
_MEMBER |= dict.fromkeys(("tokens_median", "tokens_q95"), (1, 100_000))
_BENCH = {"item_spread": (0, 6), "misconception": (0, 1)}
_DYNAMICS: dict[str, tuple[float, float]] = {"context_cost": (0, 4), "tokens_per_char": (0.001, 100)}
_DYNAMICS |= dict.fromkeys(
    ("persuasion", "mislead", "stubbornness", "reflect", "cut_persuasion", "verify"), _SHARE
)
_DYNAMICS["context_free_tokens"] = (0, 1_000_000)


def parse(name: str, raw: Any, where: str = "population") -> Population:
    """A `Population` from a file's parsed YAML (PopulationError naming the field)."""
    if not isinstance(raw, Mapping):
        raise PopulationError(f"{where}: expected a mapping of version/members/benchmarks/dynamics")
    unknown = set(raw) - {"version", "description", "members", "benchmarks", "dynamics"}
    if unknown:
        raise PopulationError(
            f"{where}.{sorted(unknown)[0]}: unknown field; known: version, description, members, benchmarks, dynamics"
        )
    version = raw.get("version")
    if version not in VERSIONS:
        raise PopulationError(f"{where}.version: must be one of {', '.join(VERSIONS)}, got {version!r}")
    members, benches = raw.get("members"), raw.get("benchmarks")
    if not isinstance(members, Mapping) or not members:
        raise PopulationError(f"{where}.members: give at least one member")
    if not isinstance(benches, Mapping) or "default" not in benches:
        raise PopulationError(f"{where}.benchmarks: needs a 'default' entry")
    raw_members = {str(k): v for k, v in members.items()}
    member_map = {str(k): _section(f"{where}.members.{k}", v, Member, _MEMBER) for k, v in members.items()}
    for k, m in member_map.items():
        for key, since in PER_BENCH.items():
            if isinstance(getattr(m, key), Mapping) and str(version) < since:
                raise PopulationError(
                    f"{where}.members.{k}.{key}: one number per benchmark is read from population model "
                    f"{since} on; give one number, or set version: {since}"
                )
        for key, since in MEMBER_SINCE.items():
            given = raw_members[k]
            if isinstance(given, Mapping) and key in given and str(version) < since:
                raise PopulationError(
                    f"{where}.members.{k}.{key}: read from population model {since} on; "
                    f"remove it, or set version: {since}"
                )
        if m.tokens_q95 < m.tokens_median:
            raise PopulationError(
                f"{where}.members.{k}.tokens_q95: must be >= tokens_median ({m.tokens_median})"
            )
    for key, since in SINCE.items():
        if isinstance(raw.get("dynamics"), Mapping) and key in raw["dynamics"] and str(version) < since:
            raise PopulationError(
                f"{where}.dynamics.{key}: read from population model {since} on; set version: {since}"
            )
    return Population(
        name=name,
        version=str(version),
        members=member_map,
        benchmarks={
            str(k): _section(f"{where}.benchmarks.{k}", v, Bench, _BENCH) for k, v in benches.items()
        },
        dynamics=_section(f"{where}.dynamics", raw.get("dynamics") or {}, Dynamics, _DYNAMICS),
        description=str(raw.get("description") or ""),
    )


def resolve(ref: str) -> Path:
    """The file a population reference names: a path ending in .yaml/.yml, or a packaged name."""
    if ref.endswith((".yaml", ".yml")):
        return Path(ref)
    if not ref or "/" in ref or ref.startswith("."):
        raise PopulationError(f"args.population: '{ref}' is neither a packaged name nor a .yaml path")
    return HOME / f"{ref}.yaml"


def names() -> list[str]:
    """The packaged populations, `v1` (the engine's own arguments) first."""
    return ["v1", *sorted(p.stem for p in HOME.glob("*.yaml"))]


@lru_cache(maxsize=32)
def _parse_text(stem: str, text: str, where: str) -> Population:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PopulationError(f"args.population: cannot read {where}: {str(e).splitlines()[0]}") from None
    return parse(stem, raw, where=where)


def load(ref: str) -> Population:
    """The population `ref` names (parsed once per distinct content: an edited file is read anew)."""
    path = resolve(ref)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise PopulationError(
                f"args.population: {path} is over {MAX_FILE_BYTES} bytes; is it a population file?"
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        known = ", ".join(n for n in names() if n != "v1")
        raise PopulationError(
            f"args.population: no population '{ref}' ({path}); packaged: {known or 'none'}, or give a .yaml path"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise PopulationError(f"args.population: cannot read {path}: {e}") from None
    return _parse_text(path.stem, text, str(path))
