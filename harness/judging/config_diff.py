"""What changed between two runs' resolved configurations: the keys whose values differ, nested keys flattened to
dotted paths, a library's own bookkeeping left out. Reported beside a census diff, never judged.

This module imports nothing outside the standard library, so the pytest parent can use it.
"""

from __future__ import annotations

from typing import Any


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> ``{"a.b": v}``; lists stay values."""
    if not isinstance(d, dict):
        return {prefix.rstrip("."): d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_changes(a: dict | None, b: dict | None) -> list[tuple[str, Any, Any]]:
    """The keys of the resolved configuration that changed. A library's own bookkeeping is left out: a key that says its
    version (``peft_version``: the versions are reported beside), or one that a release adds or drops at its off value
    (``kasa_config: None``), which changes nothing the run does."""
    if a is None or b is None:
        return []
    fa, fb = flatten(a), flatten(b)
    absent = "<absent>"

    def bookkeeping(k: str) -> bool:
        off = (None, False, "", [], {})
        return (
            k.rsplit(".", 1)[-1].endswith("_version")
            or (k not in fa and fb[k] in off)
            or (k not in fb and fa[k] in off)
        )

    return [
        (k, fa.get(k, absent), fb.get(k, absent))
        for k in sorted(set(fa) | set(fb))
        if fa.get(k, absent) != fb.get(k, absent) and not bookkeeping(k)
    ]
