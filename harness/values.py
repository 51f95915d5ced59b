"""One walk over nested tables and lists, for the readers that refuse a value anywhere in untrusted input (a workload
file, a store record): :func:`first_bad`, and how deep they nest: :func:`depth`. Nothing here imports torch."""

from __future__ import annotations

from collections.abc import Callable
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
