"""The sweep config: YAML validated by pydantic. Unknown keys are refused with a did-you-mean, and
every error becomes one line naming the field and the fix (`ConfigError`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from actors.registry import engine_names
from data.registry import benchmark_names
from debate.methods import build_method
from debate.spec import closest, stable_hash


class ConfigError(ValueError):
    """A bad config or command line: one line, naming the field and the fix. Exit code 2."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sampling(_Strict):
    max_tokens: int = Field(512, ge=1)
    temperature: float = Field(0.7, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)


class ModelSpec(_Strict):
    """One named model of the pool: which engine serves it, where, and what it costs."""

    engine: str
    model: str | None = None  # model path or id for the engine; defaults to the pool name
    args: dict[str, Any] = Field(default_factory=dict)  # passed to the engine's constructor
    replicas: int = Field(1, ge=1)
    num_gpus: float = Field(0.0, ge=0.0)  # per replica
    num_cpus: float = Field(0.0, ge=0.0)  # per replica (Ray scheduling only)
    max_concurrency: int = Field(64, ge=1)  # requests in flight per replica
    sampling: Sampling = Sampling()  # frozen, so one shared default is safe
    structured_output: bool = False  # constrain replies to the reply JSON schema (engines that can)
    price_in: float = Field(0.0, ge=0.0)  # per million prompt tokens
    price_out: float = Field(0.0, ge=0.0)  # per million completion tokens

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        if v not in engine_names():
            raise ValueError(
                f"unknown engine '{v}'{closest(v, engine_names())}; known: {', '.join(engine_names())}"
            )
        return v


def model_identity(name: str, spec: ModelSpec) -> dict[str, Any]:
    """What decides a model's outputs (not where it runs or what it costs): the cache key's model part."""
    keep = spec.model_dump(include={"engine", "model", "args"})
    return {"name": name, **keep}


class DatasetSpec(_Strict):
    name: str
    split: str = "test"
    limit: int | None = Field(None, ge=1)
    offset: int = Field(0, ge=0)
    seed: int | None = None  # shuffles the item order before offset/limit
    path: str | None = None  # a local file or folder (offline); else the default benchmark dir or the hub

    @field_validator("name")
    @classmethod
    def _known_benchmark(cls, v: str) -> str:
        names = benchmark_names()
        if v not in names:
            raise ValueError(f"unknown benchmark '{v}'{closest(v, names)}; known: {', '.join(names)}")
        return v

    @model_validator(mode="after")
    def _known_split(self) -> DatasetSpec:
        from data.registry import benchmark_info, check_split

        check_split(benchmark_info(self.name), self.split)
        return self


class MethodEntry(_Strict):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _resolves(self) -> MethodEntry:
        build_method(self.name, self.args)  # names, types and ranges; a did-you-mean on a typo
        return self


class AgentEntry(_Strict):
    model: str
    count: int = Field(1, ge=1)


class Tracking(_Strict):
    enabled: bool = True
    uri: str | None = None  # default: sqlite:///<output_dir>/mlflow.db (or MLFLOW_TRACKING_URI)
    experiment: str = "debate-sweep"


class RayOptions(_Strict):
    address: str | None = None  # default: RAY_ADDRESS, else a private local Ray on 127.0.0.1
    num_cpus: int | None = Field(None, ge=1)  # for a local Ray only
    # Engines in the driver process instead of Ray actors. None: the simulated engine in-process,
    # every other engine in Ray actors; true: all in-process (one machine); false: all in Ray actors.
    in_process: bool | None = None
    start_timeout_s: float = Field(300.0, gt=0)  # Ray start-up, all attempts together
    start_attempts: int = Field(3, ge=1)


class SweepConfig(_Strict):
    name: str = "sweep"
    output_dir: str = "runs/sweep"
    models: dict[str, ModelSpec]
    agents: list[AgentEntry] = Field(min_length=1)  # "name" is shorthand for {model: name}
    datasets: list[DatasetSpec] = Field(min_length=1)
    methods: list[MethodEntry] = Field(min_length=1)  # "name" is shorthand for {name: name}
    rounds: int = Field(2, ge=0)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    concurrency: int = Field(64, ge=1)  # episodes in flight at once
    cache: bool = True  # the LLM-call cache in <output_dir>/llm_cache.sqlite
    tracking: Tracking = Tracking()
    ray: RayOptions = RayOptions()

    @field_validator("methods", mode="before")
    @classmethod
    def _method_shorthand(cls, v: Any) -> Any:
        return [{"name": m} if isinstance(m, str) else m for m in v] if isinstance(v, list) else v

    @field_validator("agents", mode="before")
    @classmethod
    def _agent_shorthand(cls, v: Any) -> Any:
        return [{"model": m} if isinstance(m, str) else m for m in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _agents_name_models(self) -> SweepConfig:
        for i, a in enumerate(self.agents):
            name = a.model
            if name not in self.models:
                known = list(self.models)
                raise ValueError(
                    f"agents[{i}]: model '{name}' is not in models{closest(name, known)}; known: {', '.join(known)}"
                )
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds: each seed once, please")
        return self

    def team(self) -> list[str]:
        """The model name of every seat, in order."""
        return [a.model for a in self.agents for _ in range(a.count)]

    def method_entries(self) -> list[MethodEntry]:
        return list(self.methods)

    def identity(self) -> str:
        """The sweep id: a hash of what decides results (not where they go or how fast they run)."""
        keep = self.model_dump(exclude={"output_dir", "tracking", "ray", "concurrency", "cache"})
        return stable_hash(keep)


# -- loading ------------------------------------------------------------------------------------------


def read_yaml(p: Path, what: str, keys: str) -> dict[str, Any]:
    """The mapping a config file holds; a missing file, bad YAML or another shape is a ConfigError
    naming `what` the file should be and `keys` such a file has."""
    if not p.is_file():
        raise ConfigError(f"config file not found: {p} (give the path of {what})")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of keys such as {keys}")
    return raw


def load_config(path: str | Path, overrides: list[str] | None = None, out: str | None = None) -> SweepConfig:
    """Read, override (`key.sub=value`, values parsed as YAML) and validate a sweep config."""
    p = Path(path)
    raw = read_yaml(p, "a sweep YAML, e.g. examples/quickstart.yaml", "models, agents, datasets")
    for item in overrides or []:
        apply_override(raw, item)
    if out is not None:
        raw["output_dir"] = out
    return validate(raw)


def validate(raw: dict[str, Any]) -> SweepConfig:
    try:
        return SweepConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(one_line(e)) from None


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one `--set a.b.0.c=value` to the raw config dict."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. --set rounds=3")
    key, _, text = item.partition("=")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = text
    parts = key.strip().split(".")
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(
                    f"--set {key}: '{part}' is not an index of {'.'.join(parts[:i]) or 'the config'}"
                )
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise ConfigError(f"--set {key}: '{last}' is not an index")
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(f"--set {key}: {'.'.join(parts[:-1])} is not a mapping")


_ALL_FIELDS = sorted(
    {
        f
        for m in (
            SweepConfig,
            ModelSpec,
            DatasetSpec,
            MethodEntry,
            AgentEntry,
            Tracking,
            RayOptions,
            Sampling,
        )
        for f in m.model_fields
    }
)


def one_line(e: ValidationError) -> str:
    """The first validation error as `field.path: problem (fix)`."""
    err = e.errors()[0]
    loc = ""
    for x in err["loc"]:
        loc += f"[{x}]" if isinstance(x, int) else (f".{x}" if loc else str(x))
    if err["type"] == "extra_forbidden":
        key = str(err["loc"][-1])
        return f"{loc}: unknown key{closest(key, _ALL_FIELDS)}; remove it or fix its spelling"
    if err["type"] == "missing":
        return f"{loc}: required key is missing; add it (see the README's config reference)"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg
