"""Config YAML read with limits, so no file can hang or crash the validator: at most `MAX_BYTES`,
UTF-8 only, nesting at most `MAX_DEPTH` deep, at most `MAX_ALIASES` aliases, at most `MAX_NODES`
values, also once aliases are expanded (an alias bomb is refused, not walked), and no key twice in
one mapping (YAML would silently keep the last). Every problem is a `ConfigError` naming the file
and the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sweep.config.errors import ConfigError

# Pure-Python PyYAML composes ~20k nodes/s on a busy core: these keep any file under a second or so.
MAX_BYTES = 256_000  # a config is a few KB
MAX_DEPTH = 40
MAX_ALIASES = 200
MAX_NODES = 10_000  # counted while composing (so a huge flat list stops early) and with aliases expanded
_MERGE = "tag:yaml.org,2002:merge"


class _Limited(yaml.SafeLoader):
    """SafeLoader that counts depth and aliases while composing and refuses duplicate keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.aliases = 0
        self.nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _Refused(
                    f"more than {MAX_ALIASES} aliases (*name); write the values out", self.peek_event()
                )
        self.depth += 1
        self.nodes += 1
        try:
            if self.nodes > MAX_NODES:
                raise _Refused(f"more than {MAX_NODES:,} values; a config is far smaller", self.peek_event())
            if self.depth > MAX_DEPTH:
                raise _Refused(f"nested more than {MAX_DEPTH} levels deep; flatten it", self.peek_event())
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag != _MERGE:
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.setdefault(key, line)
                except TypeError:
                    continue  # an unhashable key fails below with YAML's own message
                if first != line:
                    raise _Refused(f"key '{key}' appears twice (lines {first} and {line}); keep one", None)
        return super().construct_mapping(node, deep)


class _Refused(Exception):
    def __init__(self, message: str, where: Any) -> None:
        mark = getattr(where, "start_mark", None)
        super().__init__(f"{message} (line {mark.line + 1})" if mark is not None else message)


def _expanded_size(node: Node, memo: dict[int, int], active: set[int]) -> int:
    """Nodes in the document with every alias expanded (a DAG walk, so an alias bomb costs little)."""
    if id(node) in active:
        raise _Refused("an alias refers to a value that contains it; write the value out", node)
    if id(node) in memo:
        return memo[id(node)]
    active.add(id(node))
    size = 1
    if isinstance(node, SequenceNode):
        size += sum(_expanded_size(n, memo, active) for n in node.value)
    elif isinstance(node, MappingNode):
        size += sum(_expanded_size(k, memo, active) + _expanded_size(v, memo, active) for k, v in node.value)
    active.discard(id(node))
    memo[id(node)] = min(size, MAX_NODES + 1)
    return memo[id(node)]


def load_text(text: str, source: str) -> Any:
    """The document in `text` (YAML), within the limits above; `source` names it in errors."""
    if len(text) > MAX_BYTES:
        raise ConfigError(f"{source}: more than {MAX_BYTES:,} characters; a config is a few KB")
    loader: _Limited | None = None
    try:
        loader = _Limited(text)  # its reader refuses some characters (NUL) at once
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}, set()) > MAX_NODES:
            raise ConfigError(
                f"{source}: more than {MAX_NODES:,} values once aliases are expanded; write it out"
            )
        return loader.construct_document(node)
    except _Refused as e:
        raise ConfigError(f"{source}: {e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(
            f"{source}: not valid YAML ({' '.join(str(e).split())[:300]}); fix it there"
        ) from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply; flatten it") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_file(path: Path, what: str) -> Any:
    """The YAML document in the regular file `path` (`what` it should be, for messages)."""
    if not path.is_file():
        kind = "not a regular file" if path.exists() else "not found"
        raise ConfigError(f"config file {kind}: {path} (give the path of {what})")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror or e}); check its permissions") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES:,} bytes; a config is a few KB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); save it as UTF-8"
        ) from None
    return load_text(text, str(path))


def read_yaml(p: Path, what: str, keys: str) -> dict[str, Any]:
    """The mapping a config file holds, read within `sweep.config.yaml_limits`' limits; a missing file, bad
    YAML or another shape is a ConfigError naming `what` the file should be and `keys` it has."""
    raw = read_file(p, what) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of keys such as {keys}")
    return raw
