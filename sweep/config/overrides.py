"""`--set a.b.0.c=value`: one override of a raw config dict (values parsed as YAML, within the YAML
limits), shared by sweeps, studies and trainings. A list of named entries (methods, datasets) may be
indexed by an entry's name instead of its position: `--set methods.rumad.args.checkpoint=PATH`."""

from __future__ import annotations

from typing import Any

from debate.spec import closest
from sweep.config.errors import ConfigError
from sweep.config.yaml_limits import load_text

__all__ = ["apply_override", "entry_index"]

# Lists whose entries may be bare names (`- cot` is `{name: cot}`), as the sweep config's shorthand reads them.
_SHORTHAND = ("methods",)


def _entry_name(entry: Any, shorthand: bool) -> str | None:
    if isinstance(entry, dict) and isinstance(entry.get("name"), str):
        return str(entry["name"])
    return entry if shorthand and isinstance(entry, str) else None


def entry_index(entries: list[Any], name: str, where: str, key: str, shorthand: bool = False) -> int:
    """The index of the one entry of `entries` named `name`; a ConfigError (prefixed `--set key`)
    when none is (with did-you-mean) or several are (with their indices)."""
    names = [_entry_name(e, shorthand) for e in entries]
    hits = [i for i, n in enumerate(names) if n == name]
    if len(hits) == 1:
        return hits[0]
    if hits:
        at = ", ".join(f"{where}.{i}" for i in hits)
        example = key.replace(f"{where}.{name}", f"{where}.{hits[-1]}", 1)
        raise ConfigError(
            f"--set {key}: {len(hits)} entries of {where} are named '{name}' ({at}); "
            f"pick one by index, e.g. --set {example}=..."
        )
    known = sorted({n for n in names if n is not None})
    if not known:
        raise ConfigError(f"--set {key}: '{name}' is not an index of {where}; use 0 to {len(entries) - 1}")
    raise ConfigError(
        f"--set {key}: no entry of {where} is named '{name}'{closest(name, known)}; "
        f"names: {', '.join(known)}, or an index 0 to {len(entries) - 1}"
    )


def _index(node: list[Any], part: str, parts: list[str], i: int, key: str) -> int:
    """The position `part` (an index or an entry's name) stands for in list `node` at `parts[:i]`."""
    where = ".".join(parts[:i]) or "the config"
    if not node:
        raise ConfigError(f"--set {key}: {where} is an empty list; set it whole, e.g. --set {where}=[...]")
    if part.isdigit():
        if int(part) >= len(node):
            raise ConfigError(f"--set {key}: '{part}' is not an index of {where}; use 0 to {len(node) - 1}")
        return int(part)
    return entry_index(node, part, where, key, shorthand=i > 0 and parts[i - 1] in _SHORTHAND)


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one `--set a.b.0.c=value` to the raw config dict; a list's entry may be named by its
    index or, when exactly one entry has that `name`, by the name (`methods.rumad.args.k=2`)."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. --set rounds=3")
    key, _, text = item.partition("=")
    try:
        value = load_text(text, f"--set {key.strip()}")
    except ConfigError as e:
        if "not valid YAML" not in str(e):
            raise  # over a limit (depth, aliases, size): refused, not taken as text
        value = text
    key = key.strip()
    parts = key.split(".")
    if not all(parts):
        raise ConfigError(f"--set {item!r}: empty key part; write e.g. --set datasets.0.limit=5")
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            j = _index(node, part, parts, i, key)
            if isinstance(node[j], str) and i > 0 and parts[i - 1] in _SHORTHAND:
                node[j] = {"name": node[j]}  # `- cot` and a key under it: now the mapping it stands for
            node = node[j]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise ConfigError(f"--set {key}: {'.'.join(parts[:i])} is a value, not a mapping; set it whole")
    last = parts[-1]
    if isinstance(node, list):
        node[_index(node, last, parts, len(parts) - 1, key)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(
            f"--set {key}: {'.'.join(parts[:-1])} is not a mapping; fix it in the file or set it whole"
        )
