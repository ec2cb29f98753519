"""The sweep config: YAML validated by pydantic. Unknown keys are refused with a did-you-mean, and
every error becomes one line naming the field and the fix (`ConfigError`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from actors.populations import load as load_population
from actors.registry import ENGINES, check_engine_args, engine_names, engine_traits
from data.benchmarks.catalog import CATALOG
from debate.hooks import hook
from debate.methods import METHODS, build_method
from debate.spec import closest, stable_hash
from sweep.config import paths
from sweep.config.errors import ConfigError, model_or_error, validation_line
from sweep.config.fields import (
    Cpus,
    Large,
    Name,
    Offset,
    Price,
    Resource,
    Rounds,
    Seconds,
    Seed,
    Small,
    Temperature,
    TopP,
)
from sweep.config.overrides import (
    apply_override as apply_override,  # re-exported: callers import it from here
)
from sweep.config.yaml_limits import (
    read_yaml as read_yaml,  # re-exported: the train and study configs read it
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sampling(_Strict):
    max_tokens: Large = 512
    temperature: Temperature = 0.7
    top_p: TopP = 1.0


class ModelSpec(_Strict):
    """One named model of the pool: which engine serves it, where, and what it costs."""

    engine: str
    model: Name | None = None  # model path or id for the engine; defaults to the pool name
    args: dict[str, Any] = Field(default_factory=dict)  # passed to the engine's constructor
    replicas: Small = 1
    num_gpus: Resource = 0.0  # per replica
    num_cpus: Resource = 0.0  # per replica (Ray scheduling only)
    max_concurrency: Large = 64  # requests in flight per replica
    sampling: Sampling = Sampling()  # frozen, so one shared default is safe
    structured_output: bool = Field(False, strict=True)  # constrain replies to the reply JSON schema
    price_in: Price = 0.0  # per million prompt tokens
    price_out: Price = 0.0  # per million completion tokens

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        if v not in ENGINES:
            raise ENGINES.unknown(v)  # a ValueError: pydantic words it as this field's error
        return v

    @model_validator(mode="after")
    def _engine_args(self) -> ModelSpec:
        # Names, types and ranges against the engine's declared arguments: a typo fails here, not
        # after Ray and the engines have started.
        check_engine_args(self.engine, self.model or "model", self.args)
        return self


def population_ref(spec: ModelSpec) -> str:
    """The population a model plays: its engine's population argument (a trait), else "v1"."""
    arg = engine_traits(spec.engine).population_arg
    return str(spec.args.get(arg, "v1")) if arg else "v1"


def model_identity(name: str, spec: ModelSpec) -> dict[str, Any]:
    """What decides a model's outputs (not where it runs or what it costs): the cache key's model part."""
    ident = {"name": name, **spec.model_dump(include={"engine", "model", "args"})}
    if population_ref(spec) != "v1":  # a population file edited in place must not be answered from the cache
        ident["population_digest"] = load_population(population_ref(spec)).digest
    return ident


class DatasetSpec(_Strict):
    name: str
    split: Name = "test"
    limit: Large | None = None
    offset: Offset = 0
    seed: Seed | None = None  # shuffles the item order before offset/limit
    path: str | None = None  # a local file or folder (offline); else the default benchmark dir or the hub

    @field_validator("name")
    @classmethod
    def _known_benchmark(cls, v: str) -> str:
        if v not in CATALOG:
            raise CATALOG.unknown(v)
        return v

    @model_validator(mode="after")
    def _known_split(self) -> DatasetSpec:
        from data.benchmarks.registry import benchmark_info, check_split

        check_split(benchmark_info(self.name), self.split)
        return self


class MethodEntry(_Strict):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _resolves(self) -> MethodEntry:
        try:
            build_method(self.name, self.args)  # names, types and ranges; a did-you-mean on a typo
        except TypeError as e:  # e.g. a list where a name belongs: unhashable
            raise ValueError(f"{self.name}: an argument has the wrong type ({e}); check args") from None
        return self


class AgentEntry(_Strict):
    model: str
    count: Small = 1
    adversarial: bool = Field(
        False, strict=True
    )  # shown the gold answer and told to argue for a wrong one (each of `count`)

    @model_serializer(mode="wrap")
    def _honest_as_before(self, handler: Any) -> Any:
        """An honest seat dumps as it did before seats could be adversarial, so sweep ids and training
        fingerprints of existing configs stay what they were."""
        out = handler(self)
        if not self.adversarial and isinstance(out, dict):
            out.pop("adversarial", None)
        return out


class Tracking(_Strict):
    enabled: bool = Field(True, strict=True)
    uri: str | None = None  # default: sqlite:///<output_dir>/mlflow.db (or MLFLOW_TRACKING_URI)
    experiment: str = "debate-sweep"


class RayOptions(_Strict):
    address: Name | None = None  # default: RAY_ADDRESS, else a private local Ray on 127.0.0.1
    num_cpus: Cpus | None = None  # for a local Ray only
    # Engines in the driver process instead of Ray actors. None: the simulated engine in-process,
    # every other engine in Ray actors; true: all in-process (one machine); false: all in Ray actors.
    in_process: bool | None = Field(None, strict=True)
    start_timeout_s: Seconds = 300.0  # Ray start-up, all attempts together
    start_attempts: Small = 3


class SweepConfig(_Strict):
    name: Name = "sweep"
    output_dir: str = "runs/sweep"
    models: dict[Name, ModelSpec] = Field(min_length=1, max_length=1000)
    agents: list[AgentEntry] = Field(min_length=1, max_length=1024)  # "name" is shorthand for {model: name}
    datasets: list[DatasetSpec] = Field(min_length=1, max_length=1000)
    methods: list[MethodEntry] = Field(min_length=1, max_length=1000)  # "name" is shorthand for {name: name}
    rounds: Rounds = 2
    seeds: list[Seed] = Field(default_factory=lambda: [0], min_length=1, max_length=1000)
    concurrency: Large = 64  # episodes in flight at once
    progress_every_s: Seconds = 20.0  # off a terminal (logs), a progress line this often
    cache: bool = Field(True, strict=True)  # the LLM-call cache in <output_dir>/llm_cache.sqlite
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
            raise ValueError("seeds: a seed appears twice; list each seed once")
        if len(self.team()) > 1024:
            raise ValueError(f"agents: {len(self.team())} seats in all; at most 1024")
        seats = [(j, a.model, self.models[a.model].engine) for j, a in enumerate(self.agents)]
        for i, m in enumerate(self.methods):  # a method may need an engine trait (the oracle: reads_gold)
            needs: tuple[str, str] = hook(METHODS[m.name].params, "ENGINE_NEEDS")  # (trait, why)
            for j, name, engine in seats:
                if needs[0] and not getattr(engine_traits(engine), needs[0]):
                    able = [e for e in engine_names() if getattr(engine_traits(e), needs[0])]
                    raise ValueError(
                        f"methods[{i}]: {m.name} {needs[1]} and runs only on the {', '.join(able)} engine; "
                        f"agents[{j}] ('{name}') runs on '{engine}': use {' or '.join(able)} models only, "
                        f"or drop {m.name}"
                    )
        return self

    def team(self) -> list[str]:
        """The model name of every seat, in order."""
        return [a.model for a in self.agents for _ in range(a.count)]

    def adversaries(self) -> frozenset[int]:
        """The adversarial seats, by index."""
        flags = [a.adversarial for a in self.agents for _ in range(a.count)]
        return frozenset(i for i, f in enumerate(flags) if f)

    def method_entries(self) -> list[MethodEntry]:
        return list(self.methods)

    def identity(self) -> str:
        """The sweep id: a hash of what decides results (not where they go or how fast they run)."""
        keep = self.model_dump(
            exclude={"output_dir", "tracking", "ray", "concurrency", "cache", "progress_every_s"}
        )
        return stable_hash(keep)


# -- loading ------------------------------------------------------------------------------------------


def load_config(path: str | Path, overrides: list[str] | None = None, out: str | None = None) -> SweepConfig:
    """Read, override (`key.sub=value`, values parsed as YAML) and validate a sweep config, and
    check every place it names (`check_places`)."""
    p = Path(path)
    raw = read_yaml(p, "a sweep YAML, e.g. examples/quickstart.yaml", "models, agents, datasets")
    for item in overrides or []:
        apply_override(raw, item)
    if out is not None:
        raw["output_dir"] = out
    return check_places(validate(raw))


def validate(raw: dict[str, Any]) -> SweepConfig:
    return model_or_error(SweepConfig, raw, one_line)


def check_places(cfg: SweepConfig, urls: Mapping[str, str | None] | None = None) -> SweepConfig:
    """ConfigError unless the output dir, the tracking URI (and `urls`, by field), the dataset paths
    and the Ray address are places the user could mean (`sweep.config.paths`); `~` in the output dir is
    expanded."""
    out = str(paths.output_dir(cfg.output_dir))
    for field, url in {"tracking.uri": cfg.tracking.uri, **(urls or {})}.items():
        if url is not None:
            paths.file_url(url, field)
    for i, ds in enumerate(cfg.datasets):
        if ds.path is not None:
            paths.input_path(ds.path, f"datasets[{i}].path")
    if (
        cfg.ray.address is not None
        and cfg.ray.address not in ("auto", "local")
        and paths.ray_endpoint(cfg.ray.address) is None
    ):
        raise ConfigError(
            f"ray.address: {cfg.ray.address!r} is not host:port, ray://host:port or auto; fix it or leave it unset"
        )
    return cfg.model_copy(update={"output_dir": out}) if cfg.output_dir.startswith("~") else cfg


_MODELS = (SweepConfig, ModelSpec, DatasetSpec, MethodEntry, AgentEntry, Tracking, RayOptions, Sampling)
_ALL_FIELDS = sorted({f for m in _MODELS for f in m.model_fields})


def one_line(e: ValidationError) -> str:
    """The first validation error as `field.path: problem (fix)` (`sweep.config.errors.validation_line`)."""
    return validation_line(e, lambda loc: _ALL_FIELDS)
