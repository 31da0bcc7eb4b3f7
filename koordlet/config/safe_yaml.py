"""YAML that cannot explode: a document whose aliases would expand it beyond a bound is
refused before anything is built from it (a 400-byte "billion laughs" document becomes
hundreds of megabytes once its aliases are expanded, in a log line or a JSON answer).
Otherwise PyYAML's safe loader: plain data only."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

# Nodes a document may amount to once every alias is expanded: far above any NodeSLO or
# config file (hundreds of nodes), far below what would cost memory.
MAX_EXPANDED_NODES = 100_000


class YamlRefused(ValueError):
    """The text is not YAML, or its aliases expand it beyond the bound."""


def _expanded_size(node: yaml.Node, sizes: dict[int, int], yaml: ModuleType) -> int:
    """Nodes under `node` with aliases expanded (shared nodes counted once per reference)."""
    key = id(node)
    known = sizes.get(key)
    if known is not None:
        return known
    total = 1
    if isinstance(node, yaml.SequenceNode):
        total += sum(_expanded_size(child, sizes, yaml) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total += sum(_expanded_size(k, sizes, yaml) + _expanded_size(v, sizes, yaml) for k, v in node.value)
    sizes[key] = min(total, MAX_EXPANDED_NODES + 1)
    return sizes[key]


def load(text: str) -> Any:
    """The document's data (None for an empty one), or YamlRefused."""
    # imported here: PyYAML is ~10 ms of the daemon's start, and only a --config file or a
    # NodeSLO file is YAML
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}, yaml) > MAX_EXPANDED_NODES:
            raise YamlRefused(f"the document expands to more than {MAX_EXPANDED_NODES} nodes (aliases)")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise YamlRefused(f"not valid YAML: {exc}") from None
    finally:
        loader.dispose()
