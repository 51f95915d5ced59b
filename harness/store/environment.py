"""What a session ran on, as the alerts compare it: the library pins (which the interleaved A/B of the nightly judges)
and the environment around them (which nothing else judges: the driver, CUDA, the torch build, the image, the runner's
host)."""

from __future__ import annotations

PINS = (
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "datasets",
)  # library versions; a change of them is not an environment change
ENVIRONMENT = (
    "driver",
    "cuda",
    "torch",
    "python",
    "image",
    "runner",
    "hostname",
    "gpu_name",
    "gpu_count",
    "gpu_clocks",
    "interconnect",
    "platform",
    "cpu",
    "cpu_count",
    "harness",
)
QUIET = (
    "harness",
)  # changes most nights (the repository's commit): named where something moved, never a line of its own


def pins(rec: dict, case: dict | None = None) -> dict[str, str | None]:
    """The library pins of a session (and the workload spec of one of its cases): what must be equal for an environment
    alert."""
    v = rec.get("versions") or {}
    out = {lib: v.get(lib) for lib in PINS}
    if case is not None:
        out["workload spec"] = case.get("workload_hash")
    return out


def changes(before: dict, after: dict, keys: tuple[str, ...] = ENVIRONMENT) -> list[dict]:
    """``{"name", "old", "new"}`` for every field of ``keys`` that differs between two flat dicts (a missing one is
    None)."""
    return [{"name": k, "old": before.get(k), "new": after.get(k)} for k in keys if before.get(k) != after.get(k)]


def env_changes(before: dict, after: dict) -> list[dict]:
    """How the environment of session record ``after`` differs from that of ``before``."""
    return changes(before.get("environment") or {}, after.get("environment") or {})


def pin_changes(
    before: dict, after: dict, case_before: dict | None = None, case_after: dict | None = None
) -> list[dict]:
    return changes(pins(before, case_before), pins(after, case_after), (*PINS, "workload spec"))


def text(chs: list[dict], quiet: bool = True) -> str:
    """``driver 580.1→590.2; image (none)→sha256:…``; the quiet fields (the harness commit) left out when ``quiet``."""
    shown = [c for c in chs if not (quiet and c["name"] in QUIET)]
    return (
        "; ".join(f"{c['name']} {_short(c['old'])}→{_short(c['new'])}" for c in shown)
        or "no recorded environment change"
    )


def _short(v) -> str:
    if v is None:
        return "(none)"
    s = str(v)
    return s if len(s) <= 40 else s[:39] + "…"
