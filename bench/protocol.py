"""A pre-registered protocol per learner (bench/protocols/README.md): `bench/protocols/<name>.yaml`
names the population (and the digest its file must still have), the training, the test items, the
training and test seeds (disjoint), the reward coefficients, the baselines run beside the learner and
the declared targets. Every problem is one `ConfigError` line naming the field and the fix. The ledger
and the targets' measurement are in bench/protocol_results.py; what a bench does with a protocol is in
bench/protocol_bench.py."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

import actors.populations as populations
from bench.cpp_restarts import check_restarts
from common.names import closest
from debate.methods import build_method
from debate.registry import SHARED_DEFAULTS
from debate.routers.cpp import seat_quantiles
from sweep.config.errors import FIXES, ConfigError, model_or_error, validation_line
from sweep.config.fields import NoBool, Seed
from sweep.config.yaml_limits import read_yaml
from sweep.train.trainers import TRAINERS

ROOT = Path(__file__).resolve().parents[1]
DOCS = "bench/protocols/README.md"
Label = Annotated[str, Field(min_length=1, max_length=200, strict=True)]
Finite = Annotated[float, NoBool, Field(allow_inf_nan=False)]  # true is not 1.0
# a CPP truncation setting: one quantile ("0.9") or one per seat ("0.85/0.95/0.95")
Setting = Annotated[str, AfterValidator(lambda s: seat_quantiles(s) and s)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Train(_Strict):
    config: Label  # the training YAML, relative to the repository
    set: list[str] = []  # training keys (`sweep train --set`), after the seed key the bench sets
    base_set: list[str] = []  # base-sweep overrides, appended to the config's `overrides`
    adv_set: list[str] = []  # the cpp bench: training keys of the Adv-CPP trainings only, after `set`
    dataset: Label  # what the training resolves to (checked): its one dataset, split and limit
    split: Label
    limit: Annotated[int, Field(ge=1, strict=True)] | None


class Test(_Strict):
    dataset: Label
    split: Label
    items: Annotated[int, Field(ge=1, le=10_000_000, strict=True)]  # the first items after the shuffle
    shuffle_seed: Seed = 0
    # past the shuffle, the items start here: a fresh sample beside an earlier protocol's first items
    offset: Annotated[int, Field(ge=0, strict=True)] = 0


class Choice(_Strict):
    """The items and seeds the cpp bench chooses among restarts on: each restart's policy runs them (on
    the honest team for CPP, under the adversary for Adv-CPP) and the most accurate is tested. Never
    test items, never training items (the bench compares item ids with the trainings' first)."""

    dataset: Label
    split: Label
    offset: Annotated[int, Field(ge=0, strict=True)] = 0  # after the shuffle
    items: Annotated[int, Field(ge=1, le=100_000, strict=True)]
    shuffle_seed: Seed | None = None  # the training's own shuffle seed puts `offset` past its items
    seeds: Annotated[list[Seed], Field(min_length=1)]


class Baseline(_Strict):
    label: Label  # the row's name in the report and in targets
    method: Label
    args: dict[str, Any] = {}


class Target(_Strict):
    compare: Label  # a row: the learner's or a baseline's
    against: Label
    metric: Literal["accuracy", "tokens", "cost"]  # tokens and cost: per task
    direction: Literal[">=", "<="]  # the claim: (compare - against) <direction> margin
    margin: Finite = 0.0
    relative: bool = Field(False, strict=True)  # the difference as compare / against - 1
    test: Literal["mcnemar", "none"] = "none"  # mcnemar: the difference must also be significant
    alpha: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05


RESTART_STRIDE = 1000  # restart r of the training with seed s trains with seed s + RESTART_STRIDE * r


class Protocol(_Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,99}$")]  # the file's name, without .yaml
    learner: Literal["rumad", "cpp"]  # the trained method (a method in sweep.train.trainers.TRAINERS)
    population: Label  # a packaged population (populations/<name>.yaml), or v1: the engine's own arguments
    # the file's content digest; none for v1 (its team's engine arguments are in the training's base
    # sweep, which the ledger pins through the trainings' fingerprints)
    population_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")] | None = None
    train: Train
    test: Test
    train_seeds: Annotated[list[Seed], Field(min_length=1)]  # the i-th training's ppo.seed / pg.seed
    test_seeds: Annotated[list[Seed], Field(min_length=1)]  # the i-th policy's evaluation seed
    reward: dict[str, Finite]  # every coefficient, as the training resolves it
    baselines: list[Baseline] = []
    targets: Annotated[list[Target], Field(min_length=1)]
    truncate: Annotated[list[Setting], Field(min_length=1)] | None = None  # the cpp bench's truncations
    # arguments every method takes (debate.registry.SHARED_DEFAULTS, e.g. reasoning_chars), given to
    # every method the bench runs; the training must resolve to the same (checked)
    method_args: dict[str, Any] = {}
    # the cpp bench: honest CPP's and Adv-CPP's trainings per train seed (restart r trains with seed +
    # 1000 r); the one whose best evaluation on its training items scored highest (eval.return) is tested
    restarts: Annotated[int, Field(ge=1, le=8, strict=True)] = 1
    adv_restarts: Annotated[int, Field(ge=1, le=8, strict=True)] = 1
    # with one, the restart chosen is the most accurate on these items instead, on the honest team
    # (`choice`) or under the adversary (`adv_choice`) (bench/protocols/README.md)
    choice: Choice | None = None
    adv_choice: Choice | None = None
    # the cpp bench: the Adv-CPP trainings' coefficients where they differ from `reward`
    adv_reward: dict[str, Finite] = {}

    def declared_reward(self, adversarial: bool = False) -> dict[str, float]:
        """Every coefficient the protocol declares: its file's, and those added to the learner's reward
        after the first protocols that the file leaves out, at their old values (`adversarial`: an
        Adv-CPP training's, with `adv_reward` over them)."""
        own = self.adv_reward if adversarial else {}
        return {**getattr(TRAINERS[self.learner].reward, "ADDED", {}), **self.reward, **own}

    @model_validator(mode="after")
    def _consistent(self) -> Protocol:
        if self.restarts > 1 and self.learner != "cpp":
            raise ValueError("restarts: only the cpp bench restarts its trainings; remove it")
        adv_only = (
            ("adv_restarts", self.adv_restarts > 1, "remove it"),
            ("train.adv_set", self.train.adv_set, "move its keys to train.set"),
            ("adv_reward", self.adv_reward, "move its coefficients to reward"),
        )
        for key, given, fix in adv_only:
            if given and self.learner != "cpp":
                raise ValueError(f"{key}: only the cpp bench trains Adv-CPP; {fix}")
        check_restarts(self, RESTART_STRIDE)  # the cpp bench's restarts and their choices
        for seed in sorted(set(self.train_seeds) & set(self.test_seeds)):
            raise ValueError(
                f"test_seeds: {seed} is in train_seeds too; test seeds never seen in training: "
                "pick test seeds outside train_seeds"
            )
        for key, seeds in (("train_seeds", self.train_seeds), ("test_seeds", self.test_seeds)):
            for seed in (s for i, s in enumerate(seeds) if s in seeds[:i]):
                raise ValueError(f"{key}: seed {seed} appears twice; list each seed once")
        if len(self.test_seeds) != len(self.train_seeds):
            raise ValueError(
                f"test_seeds: {len(self.test_seeds)} for {len(self.train_seeds)} train_seeds; give one "
                "test seed per training (the i-th policy is evaluated under the i-th test seed)"
            )
        for key, sets in (("set", self.train.set), ("adv_set", self.train.adv_set)):
            for i, item in enumerate(sets):
                if item.replace(" ", "").startswith((f"{TRAINERS[self.learner].name}.seed=", "output_dir=")):
                    raise ValueError(
                        f"train.{key}[{i}]: '{item}' is the bench's to set (the seed from train_seeds, "
                        "the dir from --out); remove it"
                    )
        if (self.test.dataset, self.test.split) == (self.train.dataset, self.train.split):
            raise ValueError(f"test.split: '{self.test.split}' is the training's too; test on held-out items")
        known = TRAINERS[self.learner].reward_keys()
        for section, given in (("reward", self.reward), ("adv_reward", self.adv_reward)):
            for key in (k for k in given if k not in known):
                raise ValueError(
                    f"{section}.{key}: unknown coefficient of {self.learner}{closest(key, known)}; "
                    f"known: {', '.join(known)}"
                )
        missing = [k for k in known if k not in self.declared_reward()]
        if missing:
            raise ValueError(
                f"reward.{missing[0]}: missing; declare every coefficient the training resolves to "
                f"(missing: {', '.join(missing)})"
            )
        for key in (k for k in self.method_args if k not in SHARED_DEFAULTS):
            raise ValueError(
                f"method_args.{key}: not an argument every method takes{closest(key, list(SHARED_DEFAULTS))}; "
                f"give one of: {', '.join(SHARED_DEFAULTS)} (a method's own arguments go in its baseline)"
            )
        try:
            build_method("vote", self.method_args)
        except (KeyError, ValueError, TypeError) as e:
            raise ValueError(f"method_args: {e}") from None
        labels = [b.label for b in self.baselines]
        for i, b in enumerate(self.baselines):
            if labels.index(b.label) != i:
                raise ValueError(f"baselines[{i}].label: '{b.label}' names two baselines; rename one")
            try:
                build_method(b.method, self.args(b.args))
            except (KeyError, ValueError, TypeError) as e:
                raise ValueError(f"baselines[{i}]: {e}") from None
        for i, t in enumerate(self.targets):
            if t.compare == t.against:
                raise ValueError(f"targets[{i}].against: the same row as compare; name another row")
            if t.test == "mcnemar" and (t.metric != "accuracy" or t.margin != 0 or t.relative):
                raise ValueError(
                    f"targets[{i}].test: McNemar tests paired accuracy against a difference of 0; use "
                    "metric: accuracy, margin: 0 and relative: false, or test: none"
                )
        return self

    def training(self, seed: int, adversarial: bool = False) -> tuple[Path, list[str], list[str]]:
        """`load_train`'s config, training keys and base-sweep overrides for the training `seed`
        (`adversarial`: an Adv-CPP training, with `train.adv_set` after `train.set`)."""
        own = self.train.adv_set if adversarial else []
        sets = [f"{TRAINERS[self.learner].name}.seed={seed}", *self.train.set, *own]
        return ROOT / self.train.config, sets, [*self.train.base_set]

    def args(self, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A method's arguments under this protocol: `method_args`, then the method's own."""
        return {**self.method_args, **(args or {})}

    def baseline_rows(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [(b.label, b.method, self.args(b.args)) for b in self.baselines]


SECTIONS: dict[str, type[BaseModel]] = dict(
    train=Train, test=Test, baselines=Baseline, targets=Target, choice=Choice, adv_choice=Choice
)


def _line(e: ValidationError) -> str:
    """The first error in one line; an unknown key's did-you-mean from the keys of its own section."""
    at = lambda loc: SECTIONS.get(str(loc[0]) if len(loc) > 1 else "", Protocol).model_fields  # noqa: E731
    return validation_line(
        e, at, noun="protocol key", docs=DOCS, fixes=FIXES | {"literal_error": "; give one of these"}
    )


def protocol_hash(path: str | Path) -> str:
    """The sha256 of the file's bytes: any edit, a comment's included, is a change."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def next_version(name: str) -> str:
    """The name of a protocol's next version: `x` -> `x-v2`, `x-v2` -> `x-v3`."""
    m = re.fullmatch(r"(.*)-v(\d+)", name)
    return f"{m[1]}-v{int(m[2]) + 1}" if m else f"{name}-v2"


def shown(path: str | Path) -> str:
    """`path` relative to the repository when inside it."""
    full = Path(path).resolve()
    return str(full.relative_to(ROOT)) if full.is_relative_to(ROOT) else str(full)


def load_protocol(path: str | Path) -> Protocol:
    """The validated protocol in `path`; its population must still have the declared digest."""
    raw = read_yaml(Path(path), f"a protocol file (see {DOCS})", "name, learner, population, train, targets")
    p, stem = model_or_error(Protocol, raw, _line), Path(path).stem
    if p.name != stem:
        raise ConfigError(f"name: '{p.name}' is not the file's name '{stem}'; name a protocol after its file")
    if p.population.endswith((".yaml", ".yml")) or "/" in p.population:
        raise ConfigError("population: give a packaged population's name (populations/<name>.yaml)")
    if p.population == "v1":
        if p.population_digest is not None:
            raise ConfigError(
                "population_digest: v1 is the engine's own arguments (no file, no digest); remove it"
            )
        return p
    known = [n for n in populations.names() if n != "v1"]
    if p.population not in known:
        raise ConfigError(
            f"population: no packaged population '{p.population}'{closest(p.population, [*known, 'v1'])}; "
            f"packaged: {', '.join(known)}; or v1 (the engine's own arguments)"
        )
    if p.population_digest is None:
        raise ConfigError(
            f"population_digest: missing; declare population '{p.population}''s digest "
            "(`sweep list populations` shows it)"
        )
    try:
        digest = populations.load(p.population).digest
    except populations.PopulationError as e:
        raise ConfigError(f"population: {str(e).removeprefix('args.population: ')}") from None
    if digest != p.population_digest:
        raise ConfigError(
            f"population_digest: population '{p.population}' now has digest {digest}, not "
            f"{p.population_digest} (its file changed); a population change is a new protocol: copy "
            f"{shown(path)} to bench/protocols/{next_version(p.name)}.yaml with the new digest"
        )
    return p
