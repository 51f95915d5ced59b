"""One generic check of a workload section's fields, driven by the dataclass annotations and a few rules per field.

A field is declared with :func:`opt` (with a default) or :func:`req` (required); its rules (``low``, ``below``,
``high``, ``choices``, ``pattern``) sit in the field's metadata. :func:`check_fields` checks every field's type against
its annotation and then its rules, and raises one line naming ``section.key``, what it must be and what it got, e.g.
``lora.r must be a positive integer, got 8.5``. Whole numbers given for a float field become floats, so that
``dropout = 0`` and ``dropout = 0.0`` are one workload.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from typing import Any

from harness.errors import BadInput
from harness.values import first_bad

_NOUNS = {str: "a string", bool: "true or false", int: "an integer", float: "a number", dict: "a table"}


class SpecError(BadInput):
    """A workload file or override is invalid. ``str(err)`` is one line for the user."""


@dataclasses.dataclass(frozen=True)
class Rules:
    """A field's rules: ``low``/``below`` (a range), ``high`` (the largest value taken), ``gt0``, ``choices``,
    ``pattern``, ``nonempty``; ``what`` (the words of the error) and ``key`` (the name the file uses, where it
    differs)."""

    low: float | None = None
    below: float | None = None
    high: int | None = None
    gt0: bool = False
    choices: tuple | None = None
    pattern: str | None = None
    nonempty: bool = False
    what: str | None = None
    key: str | None = None

    @staticmethod
    def of(f: dataclasses.Field) -> Rules:
        """The rules of field ``f`` (none for a field declared without :func:`opt` or :func:`req`)."""
        return f.metadata.get("rules") or Rules()


def opt(default: Any, **rules: Any) -> Any:
    """A field with a default and its :class:`Rules`."""
    metadata = {"rules": Rules(**rules)}
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def req(**rules: Any) -> Any:
    """A required field and its :class:`Rules`."""
    return dataclasses.field(metadata={"rules": Rules(**rules)})


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _options(tp: Any) -> tuple[Any, ...]:
    return typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)


def _matches(value: Any, tp: Any) -> bool:
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, t) for t in typing.get_args(tp))
    if origin in (list, tuple):
        inner = typing.get_args(tp)[0] if typing.get_args(tp) else Any
        return isinstance(value, origin) and all(_matches(v, inner) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, tp)


def _noun(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        inner = typing.get_args(tp)[0] if typing.get_args(tp) else Any
        return f"a list of {_noun(inner).split(' ', 1)[-1]}s" if inner in _NOUNS else "a list"
    return _NOUNS.get(origin or tp, getattr(tp, "__name__", str(tp)))


def describe(tp: Any, rules: Rules) -> str:
    """What a field must be, in words: ``a positive integer``, ``one of 'none', 'all'``, ``a number in [0, 1)``."""
    if rules.what is not None:
        return rules.what
    if rules.choices is not None:
        return "one of " + ", ".join(repr(c) for c in rules.choices)
    kinds = [t for t in _options(tp) if t is not type(None)]
    noun = " or ".join(_noun(t) for t in kinds)
    low, below = rules.low, rules.below
    if low is not None and below is not None:
        noun = f"{noun} in [{low}, {below})"
    elif low == 1 and kinds == [int]:
        noun = "a positive integer"
    elif low is not None:
        noun = f"{noun} >= {low}"
    if rules.gt0:
        noun = noun.replace("a number", "a positive number")
    if type(None) in _options(tp):
        noun += " (or left out)"
    return noun


INT_BITS = (
    64  # the integers of a TOML file: a value beyond them is no setting but a typo (a step count that never ends)
)


def _out_of_range(value: Any, key: str) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"{key or 'a value'} is {value}, not a finite number"
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not -(2 ** (INT_BITS - 1)) <= value < 2 ** (INT_BITS - 1)
    ):
        return f"{key or 'a value'} is an integer of {value.bit_length()} bits, beyond the {INT_BITS} of a TOML integer"
    return None


def out_of_range(value: Any, key: str = "") -> str | None:
    """The first value at or below ``value`` (tables and lists walked) that no workload key takes: a NaN or infinite
    number, or an integer beyond :data:`INT_BITS` bits; as ``train.learning_rate is nan, not a finite number``. None
    when none."""
    return first_bad(value, _out_of_range, key)


def _fails_rules(value: Any, rules: Rules) -> bool:
    if value is None:
        return False
    if rules.choices is not None:
        return value not in rules.choices
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, below = rules.low, rules.below
        return (low is not None and value < low) or (below is not None and value >= below) or (rules.gt0 and value <= 0)
    if isinstance(value, str) and rules.pattern is not None:
        return re.fullmatch(rules.pattern, value) is None
    if isinstance(value, (str, list, tuple)) and rules.nonempty:
        return len(value) == 0
    return False


def check_fields(obj: Any, section: str) -> None:
    """Check every field of dataclass ``obj`` against its annotation and rules; raise SpecError naming
    ``section.key``."""
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        value, tp, rules = getattr(obj, f.name), hints[f.name], Rules.of(f)
        key = rules.key or (f"{section}.{f.name}" if section else f.name)
        if (why := out_of_range(value, key)) is not None:
            raise SpecError(f"{why}; give a finite value in range")
        if not _matches(value, tp) or _fails_rules(value, rules):
            raise SpecError(f"{key} must be {describe(tp, rules)}, got {value!r}")
        if (high := rules.high) is not None and value is not None and value > high:
            raise SpecError(f"{key} = {value} is beyond its largest value, {high:,}; give at most {high:,}")
        if float in _options(tp) and int not in _options(tp) and isinstance(value, int):
            object.__setattr__(obj, f.name, float(value))  # frozen dataclass: normalise 0 to 0.0 once, here
