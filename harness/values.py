"""For the readers of untrusted input (a workload file, a store record, a results dir's files): one walk over nested
tables and lists that refuses a value anywhere (:func:`first_bad`) and says how deep they nest (:func:`depth`); the
shape a reader needs of a JSON value, checked in one walk that names the first key that does not fit
(:func:`mismatch` of a :class:`Value`, :class:`Obj`, :class:`Table` or :class:`Items`); and JSON text read with its
nesting bounded before it is parsed (:func:`load_json`). Nothing here imports torch."""

from __future__ import annotations

import json
import math
import operator
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import accumulate, repeat
from typing import Any


def depth(value: Any) -> int:
    """How deep tables and lists nest in ``value`` (a scalar is 0, ``[[1]]`` is 2), walked without recursion so that
    any depth is measured."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        v, d = todo.pop()
        items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else None
        if items is None:
            deepest = max(deepest, d)
            continue
        deepest = max(deepest, d + 1)
        todo.extend((x, d + 1) for x in items)
    return deepest


def first_bad(value: Any, bad: Callable[[Any, str], str | None], key: str = "") -> str | None:
    """``bad(v, key)`` of the first value at or below ``value`` (dicts and lists walked, keys joined as ``a.b[2]``) for
    which it says something; None when it says nothing of any."""
    if (why := bad(value, key)) is not None:
        return why
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for k, v in items:
        if (
            why := first_bad(v, bad, f"{key}[{k}]" if isinstance(k, int) else f"{key}.{k}" if key else str(k))
        ) is not None:
            return why
    return None


# ---- shapes: what a reader of untrusted JSON needs of it, checked in one walk ----------------------------------------
@dataclass(frozen=True)
class Value:
    """A JSON value of one of ``types`` (``type(None)`` among them where null is allowed), said as ``what``. A number
    (an int or a float, never true/false) must be finite and an integer at most :data:`INTEGER_BITS` long: readers
    compute with it as a float."""

    types: tuple[type, ...]
    what: str


@dataclass(frozen=True)
class Obj:
    """An object whose ``keys`` a reader takes, each of its own shape, absent or null allowed; ``required`` ones
    present, not null, not an empty string. Other keys are not read, and left alone."""

    keys: Mapping[str, Shape]
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    """An object of any keys (names: of kernels, of ops, of workload hashes), every value of shape ``value``."""

    value: Shape


@dataclass(frozen=True)
class Items:
    """A list, every item of shape ``item``."""

    item: Shape


Shape = Value | Obj | Table | Items

INTEGER_BITS = 64  # the longest integer a number may be: far above any count or byte size, a float holds it
_NULL = type(None)
TEXT = Value((str, _NULL), "a string")
NUMBER = Value((int, float, _NULL), "a finite number")
FLAG = Value((bool, _NULL), "true or false")
SCALAR = Value((str, int, float, bool, _NULL), "a string, a number or true/false")
WHOLE = Value((dict, _NULL), "an object")  # an object read as a whole (a resolved configuration, a workload spec)


def _kind(value) -> str:
    name = type(value).__name__
    return "null" if value is None else f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _at(where: str, key) -> str:
    """``where.key``, ``where[3]``, or ``where['odd key']`` for a key that is no plain name (a kernel's), cut short."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    if re.fullmatch(r"[A-Za-z0-9_-]{1,60}", key):
        return f"{where}.{key}" if where else key
    return f"{where}[{key[:60]!r}]"


def _value(value, shape: Value, where: str) -> str | None:
    if not ((bool in shape.types) if isinstance(value, bool) else isinstance(value, shape.types)):
        return f"{where} is {_kind(value)}, not {shape.what}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} is {value}, not {shape.what}"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > INTEGER_BITS:
        return f"{where} is an integer of {value.bit_length()} bits, not {shape.what} of at most {INTEGER_BITS}"
    return None


def mismatch(value, shape: Shape, where: str = "") -> str | None:
    """Where ``value`` does not fit ``shape`` first, and how, as ``cases[1].runs is missing`` or ``a.b is a str, not a
    finite number`` (``where`` names ``value`` itself); None where it fits. The walk is as deep as ``shape``. A value
    that fits is told by :func:`_fits` without naming a key; only one that may not is walked again, naming them."""
    return None if _fits(shape)(value) else _first_mismatch(value, shape, where)


def _first_mismatch(value, shape: Shape, where: str) -> str | None:
    """:func:`mismatch`'s walk that names the keys it passes."""
    if isinstance(shape, Value):
        return _value(value, shape, where or "the value")
    container = list if isinstance(shape, Items) else dict
    if not isinstance(value, container):
        return f"{where or 'it'} is {_kind(value)}, not {'a list' if container is list else 'an object'}"
    if isinstance(shape, Items):
        return next((why for i, v in enumerate(value) if (why := _first_mismatch(v, shape.item, _at(where, i)))), None)
    if isinstance(shape, Table):
        return next((why for k, v in value.items() if (why := _first_mismatch(v, shape.value, _at(where, k)))), None)
    for key in shape.required:
        if key not in value:
            return f"{_at(where, key)} is missing"
        if value[key] is None or value[key] == "":
            return f"{_at(where, key)} is {'null' if value[key] is None else 'empty'}"
    for key, sub in shape.keys.items():
        if value.get(key) is not None and (why := _first_mismatch(value[key], sub, _at(where, key))):
            return why
    return None


_FITS: dict[int, tuple[Shape, Callable[[Any], bool]]] = {}  # by the shape's id, with the shape that owns the id


def _fits(shape: Shape) -> Callable[[Any], bool]:
    """A test of ``value`` that says True only where :func:`_first_mismatch` finds nothing, made once per shape. It
    takes JSON's own types only (a subclass of one is left to the walk that names keys)."""
    if (made := _FITS.get(id(shape))) is not None and made[0] is shape:
        return made[1]
    test = _fits_test(shape)
    _FITS[id(shape)] = (shape, test)
    return test


def _fits_test(shape: Shape) -> Callable[[Any], bool]:
    if isinstance(shape, Value):
        types = frozenset(shape.types)  # bool only where named: JSON's true is no number

        def leaf(v) -> bool:
            t = type(v)
            return t in types and (math.isfinite(v) if t is float else t is not int or v.bit_length() <= INTEGER_BITS)

        return leaf
    if isinstance(shape, Items | Table):
        inner = shape.item if isinstance(shape, Items) else shape.value
        container, parts = (list, iter) if isinstance(shape, Items) else (dict, dict.values)
        if isinstance(inner, Value):  # a list or table of scalars, the most values of a record: one loop over them
            types = frozenset(inner.types)
            return lambda v: type(v) is container and _all_fit(parts(v), types)
        each = _fits(inner)
        return lambda v: type(v) is container and all(map(each, parts(v)))
    required = shape.required
    tests = {key: _fits(sub) for key, sub in shape.keys.items()}

    def obj(v) -> bool:
        if type(v) is not dict:
            return False
        for key in required:
            if (x := v.get(key)) is None or x == "":
                return False
        if len(v) < len(tests):  # the keys the object has (most are optional), else the keys the shape names
            for key, x in v.items():
                if x is not None and (test := tests.get(key)) is not None and not test(x):
                    return False
            return True
        for key, test in tests.items():
            if (x := v.get(key)) is not None and not test(x):
                return False
        return True

    return obj


def _all_fit(values: Iterable[Any], types: frozenset[type]) -> bool:
    """Whether every one of ``values`` fits a :class:`Value` of ``types``: of one of them exactly, a float finite, an
    int at most :data:`INTEGER_BITS` long."""
    for v in values:
        t = type(v)
        if t not in types or (t is float and not math.isfinite(v)) or (t is int and v.bit_length() > INTEGER_BITS):
            return False
    return True


MAX_DEPTH = 64  # arrays and objects within one another in a JSON file the harness reads: far above what it writes
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opening bracket one level in (2 - 1), a closing one out


def nesting(text: str | bytes) -> int:
    """How deep arrays and objects nest in JSON ``text``, read off the raw text before it is parsed (the parser and
    every walk over what it gives recurse once per level, so that a deep input would end them with a RecursionError):
    strings left out, the most brackets open at once."""
    raw = text.encode("utf-8", errors="replace") if isinstance(text, str) else text
    steps = _NOT_BRACKET.sub(b"", _STRING.sub(b"", raw)).translate(_STEPS)
    return max(accumulate(map(operator.sub, steps, repeat(1))), default=0)


def load_json(text: str | bytes, **kw) -> Any:
    """``json.loads(text, **kw)`` for untrusted input: ValueError with a short reason, and no other error, for text it
    refuses: not JSON, nested deeper than :data:`MAX_DEPTH` (found before parsing), a number of more digits than Python
    converts."""
    if (depth := nesting(text)) > MAX_DEPTH:
        raise ValueError(f"arrays and objects nested {depth} deep, more than {MAX_DEPTH}")
    try:
        return json.loads(text, **kw)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise ValueError(f"an integer of more than {sys.get_int_max_str_digits()} digits") from None
        raise
    except RecursionError:  # nesting counts what the parser recurses on; this is its last line of defence
        raise ValueError(f"arrays and objects nested deeper than {MAX_DEPTH}") from None
