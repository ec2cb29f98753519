"""`--set a.b.0.c=value`: one override of a raw config dict (values parsed as YAML, within the YAML
limits), shared by sweeps, studies and trainings."""

from __future__ import annotations

from typing import Any

from sweep.errors import ConfigError
from sweep.yaml_limits import load_text

__all__ = ["apply_override"]


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one `--set a.b.0.c=value` to the raw config dict."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. --set rounds=3")
    key, _, text = item.partition("=")
    try:
        value = load_text(text, f"--set {key.strip()}")
    except ConfigError as e:
        if "not valid YAML" not in str(e):
            raise  # over a limit (depth, aliases, size): refused, not taken as text
        value = text
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"--set {item!r}: empty key part; write e.g. --set datasets.0.limit=5")
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(
                    f"--set {key}: '{part}' is not an index of {'.'.join(parts[:i]) or 'the config'}; "
                    f"use 0 to {len(node) - 1}"
                )
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise ConfigError(f"--set {key}: {'.'.join(parts[:i])} is a value, not a mapping; set it whole")
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise ConfigError(f"--set {key}: '{last}' is not an index; use 0 to {len(node) - 1}")
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(f"--set {key}: {'.'.join(parts[:-1])} is not a mapping; fix it in the file or set it whole")
