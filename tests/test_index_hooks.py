"""Every optional index hook the board looks up is documented.

The board (``rankengine.board.core``) uses some index methods and attributes only
when the index has them (``getattr(index, name, None)``, ``hasattr``), with
a fallback otherwise.  Someone writing a backend learns of them from two
places: the :mod:`rankengine.index.protocol` docstring and the backend section of
``docs/api.md``.  These tests collect the names the package probes for from
its source and fail when one of them is missing from either list.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rankengine.index.protocol

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rankengine"
API = ROOT / "docs" / "api.md"


def _is_index(node: ast.expr) -> bool:
    """Does the expression name an index (``self._index``, ``index``)?"""
    if isinstance(node, ast.Attribute):
        return node.attr == "_index"
    return isinstance(node, ast.Name) and node.id in {"index", "_index"}


def probed_hooks() -> set[str]:
    """Names passed to ``getattr``/``hasattr`` on an index anywhere in the package."""
    names: set[str] = set()
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"}
                and len(node.args) >= 2
                and _is_index(node.args[0])
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                names.add(node.args[1].value)
    return names


def documented_in_index_module() -> set[str]:
    """The hooks of the "Optional hooks" section of rankengine.index.protocol: each
    is a definition-list term starting with the hook's name."""
    doc = rankengine.index.protocol.__doc__ or ""
    section = doc.split("Optional hooks\n--------------", 1)
    assert len(section) == 2, "rankengine.index.protocol has no 'Optional hooks' section"
    # A term is a line starting with ``name``, its definition indented below it.
    return set(re.findall(r"^``(\w+)[`(].*\n    \S", section[1], flags=re.MULTILINE))


def documented_in_api_page() -> set[str]:
    """The hooks of the optional-hooks table of docs/api.md: the first cell
    of each row names one."""
    text = API.read_text(encoding="utf-8")
    section = text.split("### Optional hooks", 1)
    assert len(section) == 2, "docs/api.md has no 'Optional hooks' section"
    body = section[1].split("\n#", 1)[0]  # up to the next heading
    return set(re.findall(r"^\| `(\w+)", body, flags=re.MULTILINE))


def test_the_probe_finds_the_known_hooks() -> None:
    # The collector itself must work: these are looked up today.
    assert {"tie_of", "columns", "columns_between", "build_columns"} <= probed_hooks()


def test_every_probed_hook_is_in_the_index_module_docs() -> None:
    missing = probed_hooks() - documented_in_index_module()
    assert not missing, f"rankengine.index.protocol does not document {sorted(missing)}"


def test_every_probed_hook_is_in_the_api_page() -> None:
    missing = probed_hooks() - documented_in_api_page()
    assert not missing, f"docs/api.md does not document {sorted(missing)}"


def test_every_documented_hook_is_one_the_board_uses() -> None:
    # A stale entry (a hook renamed or no longer probed) misleads as much as
    # a missing one.
    probed = probed_hooks()
    assert documented_in_index_module() <= probed
    assert documented_in_api_page() <= probed


def test_the_required_methods_are_the_protocols_and_the_api_page_lists_them() -> None:
    # The board refuses a factory's index that lacks one of PROTOCOL_METHODS;
    # the list must be the protocol's methods, as the API page names them.
    ignored = {"__init__", "__subclasshook__"}
    protocol = [
        name
        for name, value in vars(rankengine.index.protocol.OrderedIndex).items()
        if callable(value) and name not in ignored
    ]
    assert list(rankengine.index.protocol.PROTOCOL_METHODS) == protocol
    section = API.read_text().split("## Writing a backend", 1)[1].split("###", 1)[0]
    listed = re.findall(r"`([\w.]+)`", section.split("protocol is", 1)[1].split(", each", 1)[0])
    assert listed[0] == "rankengine.index.protocol.OrderedIndex"
    assert listed[1:] == protocol
