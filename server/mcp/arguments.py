"""Tool arguments checked against the input schema the tool declares, as JSON Schema reads it.

The SDK validates arguments with pydantic in lax mode: it takes "5" for an integer, true for
1, and a string holding JSON for the array it spells. A tool whose schema says integer gets
a JSON integer here (5, or 5.0, which JSON Schema counts as one), never a string or a
boolean; a string is a string; an array of strings is an array whose every item is a string.
What is wrong comes back as one sentence per argument, naming it and the type it must be.

Only the keywords the tools' schemas use are understood; a schema with any other validation
keyword is refused when its `ArgumentSchema` is built (tools.py builds them at the first
call), so that an argument of a new kind cannot pass unchecked. This module imports nothing
of the SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from docdex.errors import DocdexError, shown

# What each JSON Schema type admits of a parsed JSON value, and how a sentence names it.
_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": (
        "an integer",
        lambda v: (
            (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, float) and v.is_integer())
        ),
    ),
    "number": (
        "a number",
        lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    ),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "array": ("an array", lambda v: isinstance(v, list)),
    "object": ("an object", lambda v: isinstance(v, dict)),
    "null": ("null", lambda v: v is None),
}
_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required"}) | _ANNOTATIONS
_VALUE_KEYWORDS = frozenset({"type", "items"}) | _ANNOTATIONS


class UnsupportedSchema(DocdexError):
    """A tool's input schema uses what this module does not check."""


class ArgumentSchema:
    """One tool's input schema (an object of named properties), ready to check arguments."""

    def __init__(self, tool: str, schema: dict[str, Any]) -> None:
        _require_known(tool, schema, _OBJECT_KEYWORDS)
        if schema.get("type") != "object":
            raise UnsupportedSchema(f"{tool}'s input schema is not an object")
        self.tool = tool
        self.properties: dict[str, dict[str, Any]] = schema.get("properties", {})
        self.required: list[str] = schema.get("required", [])
        for name, prop in self.properties.items():
            _require_value_schema(f"{tool}.{name}", prop)

    def problems(self, arguments: dict[str, Any]) -> list[str]:
        """One sentence per argument that is not as the schema declares it (none: all are).
        Arguments the schema does not name are left to the tool, which ignores them."""
        found = [f"{name} is required" for name in self.required if name not in arguments]
        for name, value in arguments.items():
            prop = self.properties.get(name)
            if prop is not None:
                found += _value_problems(name, prop, value)
        return found


def _require_known(where: str, schema: dict[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(schema) - known)
    if unknown:
        raise UnsupportedSchema(f"{where}: schema keywords not checked: {', '.join(unknown)}")


def _require_value_schema(where: str, schema: dict[str, Any]) -> None:
    _require_known(where, schema, _VALUE_KEYWORDS)
    if schema.get("type") not in _TYPES:
        raise UnsupportedSchema(f"{where}: a schema needs one type of {', '.join(_TYPES)}")
    if "items" in schema:
        _require_value_schema(f"{where}[]", schema["items"])


def _value_problems(name: str, schema: dict[str, Any], value: Any) -> list[str]:
    expected, admits = _TYPES[schema["type"]]
    items = schema.get("items")
    if not admits(value):
        return [f"{name} must be {_spelled(expected, items)}; got {_described(value)}"]
    if items is None:
        return []
    return [
        problem
        for i, item in enumerate(value)
        for problem in _value_problems(f"{name}[{i}]", items, item)
    ]


def _spelled(expected: str, items: dict[str, Any] | None) -> str:
    """`an array`, or `an array of strings` when its items have a type."""
    if items is None:
        return expected
    kind = _TYPES[items["type"]][0].removeprefix("a ").removeprefix("an ")
    return f"{expected} of {kind}s"


def _described(value: Any) -> str:
    """A JSON value as a sentence names it: its type, and the value when it is short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"a string ({shown(value, 40)})"
    if isinstance(value, int | float):
        return f"a number ({value!r:.40})"
    return "an array" if isinstance(value, list) else "an object"
