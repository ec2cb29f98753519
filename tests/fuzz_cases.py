"""Generated bad configs for `tests/test_config_fuzz.py`: each `Case` is a set of files to write, the
command line to run on them, and the fragment the one-line error must hold (the field it names).

Sweep configs are a good config with one field broken in one way (every field x hostile values,
every engine's arguments x names, types and ranges); then YAML that must not parse (encodings, depth,
alias bombs, duplicate keys, size), bad `--set` overrides, bad study configs and bad search spaces.
`{tmp}` in a file or argument stands for the case's temp dir."""

from __future__ import annotations

import copy
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

import yaml

GOOD: dict[str, Any] = {
    "name": "fuzz",
    "output_dir": "{tmp}/out",
    "models": {"sim": {"engine": "simulated", "args": {"skill": 0.6}}},
    "agents": ["sim", {"model": "sim", "count": 2}],
    "datasets": [{"name": "arith", "limit": 3}],
    "methods": ["cot", {"name": "fixed", "args": {"topology": "ring"}}],
    "rounds": 1,
    "seeds": [0],
}
ENGINES: dict[str, dict[str, Any]] = {
    "openai": {"engine": "openai", "model": "m", "args": {"base_url": "http://127.0.0.1:9/v1"}},
    "llama_cpp": {"engine": "llama_cpp", "model": "smollm2-135m-instruct", "args": {"n_parallel": 1}},
    "vllm": {"engine": "vllm", "model": "some/model", "args": {"dtype": "auto"}},
    "simulated": {"engine": "simulated", "args": {"skill": 0.6}},
}
INF, NAN = float("inf"), float("nan")


@dataclass
class Case:
    name: str
    files: dict[str, str | bytes]
    argv: list[str]
    expect: str  # a fragment the error line must contain: the field (or file) it is about
    extra: dict[str, Any] = field(default_factory=dict)


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(cfg: Any) -> str:
    return yaml.dump(cfg, Dumper=_NoAliases, sort_keys=False, allow_unicode=True)


def with_value(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of `base` (GOOD) with `path` ("a.b.0.c") set to `value`."""
    cfg = copy.deepcopy(base or GOOD)
    *parents, last = path.split(".")
    node: Any = cfg
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return cfg


def sweep_case(name: str, cfg: Any, expect: str, argv: tuple[str, ...] = ()) -> Case:
    return Case(name, {"c.yaml": dump(cfg)}, ["validate", "c.yaml", *argv], expect)


WRONG_TYPES: list[Any] = [True, False, None, "x", [], [1], {}, {"a": 1}, 1.5, -1, 2**70, INF, NAN]
FIELDS: dict[str, tuple[list[Any], str]] = {
    # path: (bad values, the fragment naming the field)
    "name": (["", None, 3, [], "n" * 300], "name"),
    "output_dir": (
        [
            "",
            "   ",
            "/",
            "/etc",
            "/etc/fuzz",
            "/usr/lib/x",
            "..",
            ".",
            "~",
            "/proc/self/x",
            "/dev/null",
            "/tmp",
            "/sys/x",
            "/boot",
            3,
            None,
            ["a"],
            "{tmp}/afile",
            "{tmp}/foreign",
            "a\x00b",
        ],
        "output_dir",
    ),
    "models": ([None, [], {}, "sim", 3, ["sim"]], "models"),
    "models.sim.engine": (["", "simulatd", "vlm", 3, None, ["simulated"], "SIMULATED"], "models.sim"),
    "models.sim.model": (["", 3, ["m"], "m" * 300], "models.sim.model"),
    "models.sim.args": (["x", 3, [1], True], "models.sim.args"),
    "models.sim.replicas": ([0, -1, True, 1.5, "2", 10**6, None, INF], "models.sim.replicas"),
    "models.sim.num_gpus": ([-1, INF, NAN, True, "1", 10**9, [1]], "models.sim.num_gpus"),
    "models.sim.num_cpus": ([-0.5, INF, NAN, True, 1e9, "x"], "models.sim.num_cpus"),
    "models.sim.max_concurrency": ([0, -3, True, 1.5, 10**12], "models.sim.max_concurrency"),
    "models.sim.sampling.max_tokens": ([0, True, 2**40, -5, 2.5, "512"], "models.sim.sampling.max_tokens"),
    "models.sim.sampling.temperature": ([-1, INF, NAN, True, 1e6, "hot"], "models.sim.sampling.temperature"),
    "models.sim.sampling.top_p": ([0, 1.5, -0.1, True, NAN], "models.sim.sampling.top_p"),
    "models.sim.sampling.temp": ([0.5], "models.sim.sampling.temp"),
    "models.sim.structured_output": (["yes", 1, None, [True]], "models.sim.structured_output"),
    "models.sim.price_in": ([-1, INF, True, 1e9], "models.sim.price_in"),
    "models.sim.price_out": ([-0.01, NAN, False], "models.sim.price_out"),
    "models.sim.replica": ([2], "models.sim.replica"),
    "agents": (
        [
            [],
            None,
            "sim",
            [3],
            [["sim"]],
            [{"modle": "sim"}],
            [{"model": "nope"}],
            ["simm"],
            [{"model": "sim", "count": 0}],
            [{"model": "sim", "count": True}],
            [{"model": "sim", "count": 2000}],
            [{"model": "sim", "count": 1.5}],
            [{"model": "sim", "count": -2}],
            [{"model": "sim"}] * 1100,
        ],
        "agents",
    ),
    "datasets": (
        [
            [],
            None,
            "arith",
            [{"name": "gsm8"}],
            [{"name": "arith", "split": "tset"}],
            [{"nme": "arith"}],
            [{"name": "arith", "limt": 5}],
            [{"name": "arith", "limit": 3}, {"name": "arith", "limit": 2}],
        ],
        "datasets",
    ),
    "datasets.0.limit": ([0, -1, True, 2.5, "3", 10**9, INF], "datasets[0].limit"),
    "datasets.0.offset": ([-1, True, 10**9, 5000, 1000, "1", 0.5], "datasets[0].offset"),
    "datasets.0.seed": ([-1, 2**70, True, 1.5, "s", INF], "datasets[0].seed"),
    "datasets.0.split": (["", 3, None, "validation", "train:x"], "datasets[0]"),
    "datasets.0.path": (["", "/dev/zero", "/proc/self/environ", "{tmp}/missing.jsonl", 3], "datasets[0]"),
    "methods": (
        [[], None, ["fixd"], [3], [["cot"]], ["cot", "cot"], [{"nam": "cot"}], [{"name": "cot", "arg": {}}]],
        "methods",
    ),
    "methods.1.args": (
        [
            {"topology": ["ring"]},
            {"topology": "hexagon"},
            {"topolgy": "ring"},
            {"topology": 3},
            {"topology": None},
            {"protocol": "shout"},
            {"prompt_style": "haiku"},
            "ring",
            [1],
        ],
        "methods[1]",
    ),
    "rounds": ([-1, True, 1.5, "2", 10**6, None, [1], INF], "rounds"),
    "seeds": (
        [[], [2**70], [-1], [True], [1, 1], 3, ["a"], [0.5], [None], list(range(1001)), [INF]],
        "seeds",
    ),
    "concurrency": ([0, True, INF, -1, 10**9, "64"], "concurrency"),
    "cache": (["yes", 1, None, [True]], "cache"),
    "tracking.enabled": (["yes", 1, None], "tracking.enabled"),
    "tracking.uri": (
        [
            "",
            "sqlite:////etc/fuzz.db",
            "notaurl",
            "journal:/proc/x",
            "http://",
            "sqlite:///{tmp}/afile",
            "sqlite:////",
            3,
            ["x"],
        ],
        "tracking.uri",
    ),
    "tracking.enabld": ([False], "tracking.enabld"),
    "ray.address": (["", "not valid", "h:99999", "ray://", 3, "   "], "ray.address"),
    "ray.num_cpus": ([0, True, INF, -2, 1.5, 10**6], "ray.num_cpus"),
    "ray.adress": (["x"], "ray.adress"),
    "roundz": ([3], "roundz"),
    "seed": ([0], "seed"),
}
ENGINE_ARGS: dict[str, dict[str, list[Any]]] = {
    "simulated": {
        "skill": [7, -1, True, "0.5", NAN, INF, [0.5], None],
        "calibration": [2, -0.1, True],
        "pull": [1.5, "x"],
        "stubbornness": [-1, 3],
        "malformed_rate": [2, -0.5, True],
        "distractors": [0, 21, 2.5, True, "3"],
        "tokens_per_char": [0, -1, 1e9, INF],
        "latency_s": [-1, 1e9, True, NAN],
        "skil": [0.5],
        "latency": [1],
        "malformed": [0.1],
        "model": ["m"],
    },
    "openai": {
        "base_url": ["ftp://x", "", 3, "http://user:pw@h/v1", "not a url"],
        "max_concurrency": [0, True, 10**9, 2.5],
        "timeout_s": [0, -1, INF, True, 10**9],
        "max_retries": [-1, True, 10**4],
        "backoff_s": [-1, INF],
        "max_response_bytes": [10, True, 2**40],
        "extra_body": [{"model": "x"}, "body", [1]],
        "response_format_style": ["xml", 3],
        "api_key_env": ["sk-abc def", 3, ""],
        "base_ur": ["http://h"],
    },
    "llama_cpp": {
        "n_ctx": [0, True, 2**40, -1, 2.5],
        "n_threads": [0, -1, True, 10**6],
        "n_parallel": [0, 10_000, True],
        "chat_format": [3, ["x"]],
        "verbose": ["yes", 1],
        "n_thread": [1],
        "n_gpu_layers": [10],
    },
    "vllm": {
        "dtype": ["fp7", 3, True],
        "tensor_parallel_size": [0, True, 10**6],
        "gpu_memory_utilization": [0, 1.5, -1, NAN],
        "seed": [-1, 2**40, True],
        "max_model_len": [0, -5, True],
        "engine_args": ["x", {1: 2}],
        "enforce_eager": ["no"],
        "dtyp": ["auto"],
        "api": [None],
    },
}


def field_cases() -> list[Case]:
    out = []
    for path, (values, expect) in FIELDS.items():
        for i, v in enumerate(values):
            out.append(sweep_case(f"{path}#{i}", with_value(path, v), expect))
    for engine, args in ENGINE_ARGS.items():
        for arg, values in args.items():
            for i, v in enumerate(values):
                spec = copy.deepcopy(ENGINES[engine])
                spec["args"] = {**spec["args"], arg: v}
                cfg = with_value("models.sim", spec)
                out.append(sweep_case(f"{engine}.{arg}#{i}", cfg, "models.sim: args"))
    # Two fields broken at once: the first one reported is still named, in one line.
    pairs = list(
        itertools.combinations(
            ["rounds", "concurrency", "seeds", "models.sim.replicas", "datasets.0.limit"], 2
        )
    )
    for a, b in pairs:
        cfg = with_value(b, True, with_value(a, True))
        out.append(sweep_case(f"pair {a}+{b}", cfg, ""))
    return out


CONTAINERS = {"models", "agents", "datasets", "methods", "seeds", "models.sim.args", "methods.1.args"}
KEYS: dict[str, list[str]] = {  # where a key lives -> the keys a config may give there
    "": list(GOOD) + ["concurrency", "cache", "tracking", "ray"],
    "models.sim": [
        "engine",
        "model",
        "args",
        "replicas",
        "num_gpus",
        "num_cpus",
        "max_concurrency",
        "sampling",
        "structured_output",
        "price_in",
        "price_out",
    ],
    "models.sim.sampling": ["max_tokens", "temperature", "top_p"],
    "datasets.0": ["name", "split", "limit", "offset", "seed", "path"],
    "tracking": ["enabled", "uri", "experiment"],
    "ray": ["address", "num_cpus"],
    "agents.1": ["model", "count"],
    "methods.1": ["name", "args"],
}


def typos(word: str) -> list[str]:
    """A dropped letter, two letters swapped, a letter doubled: the slips a did-you-mean should catch."""
    out = [word[:-1], word[1:] + word[0] if len(word) > 3 else word + "x", word[0] + word[0] + word[1:]]
    if len(word) > 3:
        out.append(word[:1] + word[2] + word[1] + word[3:])
    return [t for t in dict.fromkeys(out) if t != word and t]


def typo_cases() -> list[Case]:
    out = []
    for where, keys in KEYS.items():
        for key in keys:
            for t in typos(key):
                cfg = copy.deepcopy(GOOD)
                node = cfg
                for p in where.split(".") if where else []:
                    node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
                node[t] = 1
                out.append(sweep_case(f"typo {where}.{t}", cfg, t))
    for engine, args in ENGINE_ARGS.items():
        for arg in args:
            for t in typos(arg)[:2]:
                spec = copy.deepcopy(ENGINES[engine])
                spec["args"] = {**spec["args"], t: 1}
                out.append(sweep_case(f"typo {engine}.{t}", with_value("models.sim", spec), f"args.{t}"))
    return out


def container_cases() -> list[Case]:
    """Every scalar field given a list or a mapping instead."""
    return [
        sweep_case(f"{path} as {type(v).__name__}", with_value(path, v), expect)
        for path, (_, expect) in FIELDS.items()
        if path not in CONTAINERS
        and "." in path
        or path in ("name", "output_dir", "rounds", "concurrency", "cache")
        for v in ([1, 2], {"a": 1})
    ]


def combo_cases(n: int = 300, seed: int = 16) -> list[Case]:
    """Two or three fields broken at once (drawn with a fixed seed): still one line, exit 2."""
    rng = random.Random(seed)
    entries = [(path, v) for path, (values, _) in FIELDS.items() for v in values if "." in path]
    out = []
    for i in range(n):
        cfg = GOOD
        for path, v in rng.sample(entries, rng.choice([2, 3])):
            try:
                cfg = with_value(path, v, cfg)
            except (TypeError, KeyError, IndexError, AttributeError):
                continue  # an earlier break removed what this one reaches into
        out.append(sweep_case(f"combo #{i}", cfg, ""))
    return out


def yaml_cases() -> list[Case]:
    good = dump(GOOD)
    deep = lambda n, open_, close: "models: " + open_ * n + close * n + "\n"  # noqa: E731
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(7)
    ]
    texts: list[tuple[str, bytes | str]] = [
        ("latin-1", good.replace("fuzz", "f\u00e9").encode("latin-1")),
        ("utf-16", good.encode("utf-16")),
        ("binary", bytes(range(256)) * 4),
        ("nul", good + "\x00\n"),
        ("tab indent", "models:\n\tsim: {engine: simulated}\n"),
        ("unclosed", "models: {sim: [engine\n"),
        ("top list", "- a\n- b\n"),
        ("top scalar", "just a string\n"),
        ("python tag", "models: !!python/object/apply:os.system ['true']\n"),
        ("recursive", "models: &m {sim: *m}\n"),
        ("alias bomb", "\n".join(bomb) + "\n" + good),
        (
            "alias bomb in args",
            good.replace("skill: 0.6", "skill: 0.6\n" + "\n".join("      " + b for b in bomb)),
        ),
        ("too many aliases", "x: &x 1\ny: [" + ", ".join(["*x"] * 300) + "]\n" + good),
        ("huge", good + "# " + "x" * 300_000 + "\n"),
        ("huge flat list", good + "seeds: [" + ", ".join(["0"] * 40_000) + "]\n"),
        ("many keys", good.replace("name: fuzz", "\n".join(f"k{i}: {i}" for i in range(12_000)))),
        ("dup top", good + "rounds: 3\n"),
        ("dup nested", good.replace("engine: simulated", "engine: simulated\n      engine: simulated")),
        ("dup in list item", good.replace("limit: 3", "limit: 3\n  limit: 4")),
        ("bad anchor", "a: *nothing\n"),
        ("directive", "%YAML 9.9\n---\n" + good),
        ("two docs", good + "---\n" + good),
    ]
    texts += [
        (f"deep {n} {o}", deep(n, o, c))
        for n in (41, 100, 1000, 5000)
        for o, c in (("[", "]"), ("{a: ", "}"))
    ]
    texts += [
        (f"deep block {n}", "".join("  " * i + f"k{i}:\n" for i in range(n)) + "  " * n + "v\n")
        for n in (45, 300)
    ]
    return [Case(f"yaml {name}", {"c.yaml": text}, ["validate", "c.yaml"], "c.yaml") for name, text in texts]


def override_cases() -> list[Case]:
    sets = [
        ("rounds", "--set"),
        ("=3", "--set"),
        ("a..b=1", "--set"),
        ("datasets.9.limit=3", "datasets.9.limit"),
        ("rounds.x.y=1", "rounds"),
        ("seeds=[2**70]", "seeds"),
        ("rounds=true", "rounds"),
        ("models.sim.args.skil=0.5", "models.sim: args.skil"),
        ("concurrency=.inf", "concurrency"),
        ("output_dir=/", "output_dir"),
        ("seeds=" + "[" * 100 + "]" * 100, "--set seeds"),
        ("datasets.0=[", "datasets[0]"),
        ("methods.0.x.y=1", "methods"),
    ]
    return [sweep_case(f"--set {s}", GOOD, expect, ("--set", s)) for s, expect in sets] + [
        sweep_case("--out /", GOOD, "output_dir", ("--out", "/")),
        sweep_case("--out empty", GOOD, "output_dir", ("--out", "")),
    ]


SPACE = {"method": "random", "params": {"k": {"type": "int", "low": 1, "high": 2}}}
STUDY: dict[str, Any] = {
    "name": "fz",
    "output_dir": "{tmp}/sout",
    "sweep": "base.yaml",
    "overrides": ["datasets.0.split=train"],
    "method": "random",
    "search_space": SPACE,
    "objectives": ["accuracy"],
    "n_trials": 2,
}
STUDY_FIELDS: dict[str, tuple[list[Any], str]] = {
    "name": (["", None, [1]], "name"),
    "output_dir": (["", "/", "/etc", "..", "{tmp}/foreign"], "output_dir"),
    "sweep": (["missing.yaml", "", "/dev/zero", None], "sweep"),
    "overrides": (["x", ["rounds"], ["datasets.9.limit=1"], [3]], "overrides"),
    "method": (["randm", {"name": "random", "args": {"kk": 1}}, 3, None, {"nam": "random"}], "method"),
    "search_space": (["nope", "{tmp}/missing.yaml", 3, None], "search_space"),
    "objectives": ([[], ["acc"], ["accuracy", "accuracy"], "accuracy", [3]], "objectives"),
    "sampler": (["tpx", {"name": "tpe", "args": {"sed": 1}}, {"name": "tpe", "args": {1: 2}}, 3], "sampler"),
    "pruner": (["median2", {"name": "median", "args": {"n_warmup": 1}}], "pruner"),
    "n_trials": ([0, True, -1, 1.5, 10**9, "3"], "n_trials"),
    "parallel": ([0, True, 10**6], "parallel"),
    "storage": (
        [
            "",
            "journal:/etc/passwd",
            "sqlite:////etc/x.db",
            "journal:{tmp}/afile",
            "journal:",
            "sqlite:///{tmp}/afile",
            "journal:/proc/x",
            "journal:{tmp}",
        ],
        "storage",
    ),
    "heartbeat_s": ([0, -1, INF, True, NAN], "heartbeat_s"),
    "stale_after_s": ([0, INF, "x"], "stale_after_s"),
    "allow_test_split": (["yes", 1], "allow_test_split"),
    "tracking": ([{"uri": ""}, {"uri": "sqlite:////etc/x.db"}, {"enabld": 1}], "tracking"),
    "trials": ([3], "trials"),
}
PARAMS: list[tuple[Any, str]] = [
    ({"type": "int", "low": 2, "high": 1}, "low 2 > high 1"),
    ({"type": "float", "low": 0, "high": INF}, "finite"),
    ({"type": "float", "low": NAN, "high": 1}, "finite"),
    ({"type": "int", "low": 1.5, "high": 2}, "integer"),
    ({"type": "int", "low": True, "high": 2}, "low"),
    ({"type": "tensor", "low": 1, "high": 2}, "type"),
    ({"low": 1, "high": 2}, "type"),
    ({"type": "int", "low": 1, "high": 2, "log": "yes"}, "log"),
    ({"type": "float", "low": 0, "high": 1, "log": True}, "log"),
    ({"type": "int", "low": 1, "high": 3, "step": 0}, "step"),
    ({"type": "int", "low": 1, "high": 3, "step": INF}, "step"),
    ({"choices": []}, "choices"),
    ({"choices": [1, 1]}, "choices"),
    ({"choices": [{"a": 1}]}, "choice"),
    ({"choices": [NAN]}, "choice"),
    ({"choices": "ab"}, "choices"),
    ({"type": "int", "low": 1, "high": 2, "when": {"later": 1}}, "when"),
    ({"type": "int", "low": 1, "high": 2, "hgih": 3}, "hgih"),
    ({"type": "int", "low": -1, "high": 2}, "refuses"),
    ({"type": "float", "low": 0, "high": 1}, "refuses"),
    ("k", "mapping"),
]


def study_cases() -> list[Case]:
    base = dump({**GOOD, "output_dir": "{tmp}/bout"})
    out = []

    def case(name: str, study: Any, expect: str, space: Any = None) -> Case:
        files: dict[str, str | bytes] = {"s.yaml": dump(study), "base.yaml": base}
        if space is not None:
            files["space.yaml"] = dump(space) if not isinstance(space, str | bytes) else space
        return Case(name, files, ["study", "s.yaml", "--validate"], expect)

    for path, (values, expect) in STUDY_FIELDS.items():
        for i, v in enumerate(values):
            out.append(case(f"study {path}#{i}", with_value(path, v, STUDY), expect))
    out.append(case("study test split", {**STUDY, "overrides": []}, "split"))
    out.append(case("study space not yaml", with_value("search_space", "{tmp}/afile", STUDY), "afile"))
    out.append(
        case(
            "study multi+pruner",
            {**STUDY, "objectives": ["accuracy", "tokens"], "pruner": "median"},
            "pruner",
        )
    )
    for i, (param, what) in enumerate(PARAMS):
        space = {"method": "random", "params": {"k": param}}
        inline = case(
            f"space inline #{i}", with_value("search_space", space, STUDY), "search_space: params.k"
        )
        in_file = case(
            f"space file #{i}", with_value("search_space", "space.yaml", STUDY), "space.yaml: params.k", space
        )
        for c in (inline, in_file):
            c.extra["also"] = what  # the problem itself, named
            out.append(c)
    for i, space in enumerate(
        [
            {"method": "pear", "params": {"k": {"type": "int", "low": 1, "high": 2}}},
            {"params": {}},
            {"method": "random"},
            {"method": "random", "params": {"kk": {"choices": [1]}}},
            [1, 2],
            {"method": "random", "params": {}, "extra": 1},
            "k: [",
            b"\xff\xfe",
            "a: 1\na: 2\n",
        ]
    ):
        out.append(
            case(f"space shape #{i}", with_value("search_space", "space.yaml", STUDY), "space.yaml", space)
        )
    return out


def all_cases() -> list[Case]:
    return (
        field_cases()
        + typo_cases()
        + container_cases()
        + combo_cases()
        + yaml_cases()
        + override_cases()
        + study_cases()
    )
