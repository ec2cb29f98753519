"""What a bench does with a pre-registered protocol (bench/protocol.py, bench/protocols/README.md):
its flags from the protocol (a contradicting flag refused), every training it resolves to checked
against the protocol, the targets' rows checked, the ledger claimed in --out before training, the
protocol named in the report's header and its targets evaluated at the end."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import actors.populations as populations
from bench.protocol import Choice, Protocol, Test, load_protocol, protocol_hash, shown
from bench.protocol_results import claim, targets_table
from common.names import closest
from data.benchmarks.registry import load_benchmark
from debate.spec import stable_hash
from sweep.config.errors import ConfigError
from sweep.train.config import TrainSetup

TRAINING_FLAGS = ("updates",)  # resolved by the training config under a protocol: checked, never set


def from_flags(args: Any, learner: str, dataset: str, **defaults: Any) -> Protocol | None:
    """Without `args.protocol`: each flag left unset (None) takes its default; None. With it: the
    protocol, its seeds and items set on `args`; a flag that contradicts it is refused. `updates` is
    left as given: the training resolves it (`check_setup`)."""
    if args.protocol is None:
        for key, value in defaults.items():
            setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
        return None
    p = load_protocol(args.protocol)
    if p.learner != learner:
        raise ConfigError(f"learner: {args.protocol} declares '{p.learner}'; this bench trains {learner}")
    if p.test.dataset != dataset:
        raise ConfigError(f"test.dataset: this bench evaluates on {dataset}, not '{p.test.dataset}'")
    if getattr(args, "sets", None):
        raise ConfigError("--set: the protocol's train.set and train.base_set are the training; drop --set")
    fixed: dict[str, Any] = {"seeds": len(p.train_seeds), "items": p.test.items}
    if p.truncate is not None:  # declared truncation settings (CPP)
        if "truncate" not in defaults:
            raise ConfigError("truncate: this bench runs no truncation (the cpp bench's setting); remove it")
        fixed["truncate"] = list(p.truncate)
    for key, default in ((k, v) for k, v in defaults.items() if k not in TRAINING_FLAGS):
        value, given = fixed.get(key, default), getattr(args, key)
        if given is not None and given != value:
            raise ConfigError(
                f"--{key}: {given} contradicts protocol {p.name} ({value}); drop the flag or write a new protocol"
            )
        setattr(args, key, value)
    return p


def check_setup(p: Protocol, setup: TrainSetup, rounds: int, updates: int | None = None) -> None:
    """The training `p` resolves to runs its learner, population, dataset, rounds, updates and reward."""
    where, base = f"{p.train.config} with train.set and train.base_set", setup.base
    if setup.cfg.method.name != p.learner:
        raise ConfigError(f"learner: '{p.learner}' but {p.train.config} trains '{setup.cfg.method.name}'")
    want = None if p.population == "v1" else populations.resolve(p.population).resolve()  # None: v1
    for m, spec in ((m, base.models[m]) for m in dict.fromkeys(base.team())):
        ref = spec.args.get("population") if spec.engine == "simulated" else f"engine {spec.engine}"
        if want is None:  # v1: simulated agents on the engine's own arguments
            runs = ref in (None, "v1")
            fix = "run a base sweep of v1 agents (e.g. train.set sweep=rumad_simulated.yaml)"
        else:
            runs = ref is not None and populations.resolve(str(ref)).resolve() == want
            fix = f"set models.{m}.args.population in train.base_set"
        if not runs:
            named = "v1" if want is None else f"'{p.population}'"
            raise ConfigError(
                f"population: seat model '{m}' of {where} runs {ref or 'population v1'}, not {named}; {fix}"
            )
    if len(base.datasets) != 1:
        raise ConfigError(f"train: {where} draws from {len(base.datasets)} datasets; a protocol names one")
    for key in ("dataset", "split", "limit"):
        want_, got = getattr(p.train, key), getattr(base.datasets[0], "name" if key == "dataset" else key)
        if want_ != got:
            raise ConfigError(
                f"train.{key}: the protocol declares {want_!r} but {where} resolves to {got!r}; "
                "declare what the training runs"
            )
    trained = setup.method.spec.kwargs
    for key, value in p.method_args.items():
        if trained[key] != value:
            raise ConfigError(
                f"method_args.{key}: the protocol gives every method {value!r} but {where} trains with "
                f"{trained[key]!r}; add method.args.{key}={value} to train.set"
            )
    if base.rounds != rounds:
        raise ConfigError(f"train: {where} runs {base.rounds} rounds; this bench evaluates {rounds}")
    if updates is not None and updates != setup.updates:
        raise ConfigError(
            f"--updates: {updates} contradicts protocol {p.name} ({setup.updates}, from {where}); drop the flag"
        )
    adversarial = bool(base.adversaries())  # an Adv-CPP training: `adv_reward` over `reward`
    declared_reward, own = p.declared_reward(adversarial), p.adv_reward if adversarial else {}
    for key, got in dataclasses.asdict(setup.rewards).items():
        declared = declared_reward.get(key)
        if declared != got:
            section = "adv_reward" if key in own else "reward"
            said = "declares" if key in p.reward or key in own else "leaves out (so)"
            raise ConfigError(
                f"{section}.{key}: the protocol {said} {declared} but {where} resolves to {got}; "
                "declare what the training runs"
            )


def check_rows(p: Protocol, rows: Sequence[str], metrics: Sequence[str]) -> None:
    """Every target names a row the bench will run and a metric it measures; no row is named twice."""
    for row in sorted({r for r in rows if list(rows).count(r) > 1}):
        raise ConfigError(f"baselines: '{row}' is a row this bench runs already; rename that baseline")
    for i, t in enumerate(p.targets):
        for key, label in (("compare", t.compare), ("against", t.against)):
            if label not in rows:
                raise ConfigError(
                    f"targets[{i}].{key}: '{label}' is not a row of this bench{closest(label, rows)}; "
                    f"rows: {', '.join(rows)}"
                )
        if t.metric not in metrics:
            raise ConfigError(
                f"targets[{i}].metric: this bench measures {', '.join(metrics)}, not {t.metric}"
            )


def pins(
    setups: Sequence[TrainSetup], items: Sequence[Any], choice: Sequence[Any] = (), honest: Sequence[Any] = ()
) -> dict[str, str]:
    """Digests of what a protocol resolves to: every training (fingerprint, updates), the test items
    and, where it has them, the items Adv-CPP's restarts (`choice`) and CPP's (`honest`) are chosen on."""
    trainings = [[s.fingerprint(), s.updates] for s in setups]
    got = {"training": stable_hash(trainings), "test_items": stable_hash([str(i.id) for i in items])}
    got |= {"choice_items": stable_hash([str(i.id) for i in choice])} if choice else {}
    return got | ({"honest_choice_items": stable_hash([str(i.id) for i in honest])} if honest else {})


def check_choice(setups: Sequence[TrainSetup], choice: Sequence[Any], key: str = "adv_choice") -> None:
    """No item restarts are chosen on (those of protocol key `key`) is one a training draws its
    episodes from."""
    for setup in setups:
        d = setup.base.datasets[0]
        trained = {str(i.id) for i in load_benchmark(d.name, d.split, d.limit, d.offset, d.seed, d.path)}
        for item in (i for i in choice if str(i.id) in trained):
            raise ConfigError(
                f"{key}: item {item.id} is one the training draws from; give an offset past its items"
            )


def test_items(p: Protocol | None, dataset: str, split: str, limit: int) -> list[Any]:
    """The items a bench tests on: the protocol's test slice, else `split`'s first `limit` items after
    the shuffle by seed 0."""
    t = p.test if p else Test(dataset=dataset, split=split, items=limit)
    return load_benchmark(dataset, t.split, limit=limit, offset=t.offset, seed=t.shuffle_seed)


def check_items(p: Protocol, items: Sequence[Any]) -> None:
    """ConfigError unless the bench loaded all `test.items` (a split ends before `offset + items`)."""
    t = p.test
    if len(items) < t.items:
        raise ConfigError(
            f"test.items: {t.dataset} {t.split} has {len(items)} items past offset {t.offset}, not {t.items}; "
            "lower test.items or test.offset"
        )


def begin(path: str | Path, p: Protocol, out: str | Path, setups: Sequence[TrainSetup], items: Sequence[Any],
          rows: Sequence[str], metrics: Sequence[str], rounds: int, updates: int | None,
          choice: Sequence[Any] = (), honest: Sequence[Any] = ()) -> None:  # fmt: skip
    """Before training: each training checked against the protocol, each target's rows, the items
    restarts are chosen on (Adv-CPP's `choice`, CPP's `honest`) against the trainings', the ledger
    claimed."""
    for setup in setups:
        check_setup(p, setup, rounds, updates)
    check_items(p, items)
    check_rows(p, rows, metrics)
    check_choice(setups, choice)
    check_choice(setups, honest, "choice")
    claim(out, path, pins(setups, items, choice, honest))


def header(path: str | Path, p: Protocol) -> str:
    """The report's first line under a protocol."""
    train, test = p.train, p.test
    return (
        f"protocol {p.name} ({shown(path)}, sha256 {protocol_hash(path)}): population {p.population} "
        f"({p.population_digest or 'the engine arguments of the training base sweep'}); trained on {train.dataset} {train.split}[:{train.limit}], train seeds "
        f"{p.train_seeds}; evaluated on {test.dataset} {test.split}[{span(test.offset, test.items)}] (shuffle seed "
        f"{test.shuffle_seed}), test seeds {p.test_seeds}"
        f"{f'; every method with {p.method_args}' if p.method_args else ''}"
        f"{f'; CPP the best of {p.restarts} trainings per seed {chosen_on(p.choice, False)}' if p.restarts > 1 else ''}"
        f"{f'; Adv-CPP the best of {p.adv_restarts} trainings per seed {chosen_on(p.adv_choice)}' if p.adv_restarts > 1 else ''}"
        f"{adv_own(p)}\n"
    )


def adv_own(p: Protocol) -> str:
    """What the Adv-CPP trainings alone are given (`train.adv_set`, `adv_reward`), in words; "" if nothing."""
    own = [f"with {', '.join(p.train.adv_set)}"] if p.train.adv_set else []
    own += [f"reward {p.adv_reward} over the rest"] if p.adv_reward else []
    return f"; Adv-CPP trained {' and '.join(own)}" if own else ""


def span(offset: int, items: int) -> str:
    """A slice in words: ":200" from the start, "200:1000" past an offset."""
    return f":{items}" if offset == 0 else f"{offset}:{offset + items}"


def chosen_on(c: Choice | None, adversary: bool = True) -> str:
    """How the protocol chooses among restarts (Adv-CPP's under the `adversary`, else CPP's), in words."""
    if c is None:
        return "on training items"
    shuffled = "" if c.shuffle_seed is None else f" (shuffle seed {c.shuffle_seed})"
    team = "under the adversary" if adversary else "on the honest team"
    return f"by accuracy {team} on {c.dataset} {c.split}[{c.offset}:{c.offset + c.items}]{shuffled}, seeds {c.seeds}"


def report(path: str | Path, p: Protocol, out: str | Path, rows: Mapping[str, Sequence[Any]]) -> str:
    """At the end: the file checked against the ledger again, then the declared targets as measured."""
    claim(out, path)
    check_rows(p, list(rows), ("accuracy", "tokens", "cost"))  # the rows the bench did run
    table, passed = targets_table(p, rows)
    return f"### declared targets (protocol {p.name})\n\n{table}\n\n{passed} of {len(p.targets)} targets pass"


@contextmanager
def one_line() -> Iterator[None]:
    """A ConfigError inside becomes `error: <line>` on stderr and exit status 2, as the CLI's."""
    try:
        yield
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
