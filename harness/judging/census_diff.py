"""The pure half of the census (no torch): compare two censuses, word the changes, judge the counts.

A census (``harness/census.py``, ``docs/measurement.md`` "Census") counts the work of one optimizer
step: aten operators, CUDA kernel launches, synchronisations, allocations, Python calls, and the tokens
the step consumed (real and padded), and the run's peak device memory with the bytes each aten op allocated. Counts
do not depend on how fast the machine is, so two censuses of one workload compare exactly: a diff that is not empty is
a change of the work, not noise. Peak memory compares within the memory verdict's tolerance
(:class:`harness.judging.stats.MemoryCheck`): a move beyond it is listed and lets a bisection attribute it, but is not a
change of the work (the memory verdict judges memory). Times (``kernel_ms``, ``cpu_op_ms``) are carried
along for information; their relative change is reported and never judged here.

This module imports nothing outside the standard library, so the pytest parent can use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.judging.config_diff import config_changes
from harness.judging.stats import MemoryCheck
from harness.results.census import Census

GROUPS = ("syncs", "alloc")  # dicts of per-step counters
NAMED = {"ops": "ops_by_name", "kernels": "kernels_by_name"}
TOKENS = ("real", "padded")  # the keys of a census's "tokens": per-step tokens without and with the padding
LABELS = {
    "ops": "aten ops",
    "kernels": "kernel launches",
    "python_calls": "Python calls",
    "syncs": "syncs",
    "alloc": "allocator calls",
}
MEMORY = {
    "peak_reserved_bytes": "peak reserved memory",
    "peak_allocated_bytes": "peak allocated memory",
}  # a census's "memory" peaks
TOP = 8  # names shown per line
TOP_ALLOCATIONS = 3  # ops named beside a memory line


@dataclass(frozen=True)
class Change:
    """One counter that differs: per optimizer step, ``delta = cur - base`` (a missing side counts as 0)."""

    name: str
    base: float | None
    cur: float | None

    @property
    def delta(self) -> float:
        return (self.cur or 0) - (self.base or 0)


@dataclass(frozen=True)
class CensusDiff:
    """What differs between two censuses. Every count is per optimizer step.

    ``counters``: the scalar counters (``ops``, ``kernels``, ``python_calls``) that differ beyond their
    tolerance; ``ops`` / ``kernels``: per-name changes, largest ``|delta|`` first; ``syncs`` / ``alloc``:
    the CUDA runtime counters that differ; ``time``: the per-name time changes (kernel time on GPU,
    self CPU time of aten ops on CPU), largest first, with ``time_total = (base_ms, cur_ms, relative)``,
    never judged; ``memory``: the peaks (``peak_reserved_bytes``, ``peak_allocated_bytes``) that moved beyond the memory
    tolerance (never where a side has none: a CPU census); ``allocations``: the bytes allocated per step by aten op that
    differ, largest ``|delta|`` first (where both sides summarised them); ``attention``: ``(base, cur)`` when the SDPA
    backend changed; ``tokens``: ``(base, cur)``, the two ``{"real", "padded"}`` token counts, when either differs (None
    when they are equal or a side did not count them); ``config``: ``(key, old, new)`` for every changed key of the
    resolved configuration (reported, not judged); ``missing``: why a side could not be compared (no census, or its
    window did not fit).
    """

    counters: dict[str, Change] = field(default_factory=dict)
    ops: list[Change] = field(default_factory=list)
    kernels: list[Change] = field(default_factory=list)
    syncs: list[Change] = field(default_factory=list)
    alloc: list[Change] = field(default_factory=list)
    time_key: str = "kernel_ms"
    time_total: tuple[float | None, float | None, float | None] | None = None
    time: list[Change] = field(default_factory=list)
    memory: list[Change] = field(default_factory=list)
    allocations: list[Change] = field(default_factory=list)
    attention: tuple[str, str] | None = None
    tokens: tuple[dict, dict] | None = None
    config: list[tuple[str, Any, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def counts_changed(self) -> bool:
        """Whether any judged count (or the attention backend) differs beyond its tolerance."""
        return bool(
            self.counters or self.ops or self.kernels or self.syncs or self.alloc or self.attention or self.tokens
        )

    @property
    def changed(self) -> bool:
        """Whether a judged count or a peak of memory moved beyond its tolerance (what a bisection searches for)."""
        return self.counts_changed or bool(self.memory)


@dataclass(frozen=True)
class CensusVerdict:
    """``outcome``: ``pass`` (every count equal within tolerance), ``changed`` (``lines`` say what), or
    ``unknown`` (a side has no comparable census; ``lines`` say why)."""

    outcome: str
    lines: list[str]
    diff: CensusDiff


def is_annotation(name: str) -> bool:
    """A GPU-side user annotation (``Optimizer.step#AdamW.step``, ``ProfilerStep#6``) rather than a kernel: the
    profiler mirrors ``record_function`` ranges onto the device timeline, where they span the kernels inside
    them. Kernel names that contain ``#`` (lambdas) also contain ``(``, ``<``, ``:`` or a space."""
    return "#" in name and not re.search(r"[(<: ]", name)


def _annotations(by_name: Mapping[str, float] | None) -> dict[str, float]:
    """The GPU user annotations among counts or times by kernel name."""
    return {k: v for k, v in (by_name or {}).items() if is_annotation(k)}


def _without(by_name: Mapping[str, float] | None, names: Mapping[str, float]) -> dict[str, float]:
    return {k: v for k, v in (by_name or {}).items() if k not in names}


def as_census(c: Census | Mapping[str, Any] | None) -> Census | None:
    """A census typed: a :class:`Census` as it is, a run record's ``census`` object read (one written without ``fits``
    is taken to fit, as before the key was written); None for none."""
    if c is None or isinstance(c, Census):
        return c
    if not c:
        return None
    return Census.from_json(c if "fits" in c else {**c, "fits": True})


def normalized(c: Census | Mapping[str, Any] | None) -> Census | None:
    """The census typed (:func:`as_census`) with no GPU user annotations among its kernels, as :func:`normalize`
    leaves a record's census."""
    c = as_census(c)
    ann_k = _annotations(c.kernels_by_name if c is not None else None)
    if c is None or not ann_k:
        return c
    ann_t = _annotations(c.kernel_ms_by_name)
    out = replace(
        c, kernels_by_name=_without(c.kernels_by_name, ann_k), kernels=round((c.kernels or 0) - sum(ann_k.values()), 4)
    )
    if c.kernel_ms is None:
        return out
    return replace(
        out,
        kernel_ms_by_name=_without(c.kernel_ms_by_name, ann_t),
        kernel_ms=round(c.kernel_ms - sum(ann_t.values()), 4),
    )


def normalize(c: dict | None) -> dict | None:
    """A census in the shape ``harness.measuring.census`` records today, whenever it was recorded: ``tokens`` is
    there (None where the census did not count them, recorded before it did), so is ``memory``, and no GPU user
    annotations are among its kernels: their count leaves ``kernels`` and ``kernels_by_name``, their time ``kernel_ms``
    and ``kernel_ms_by_name`` (censuses recorded before ``harness.measuring.census`` told them apart counted the
    optimizer's annotation as one kernel per step and its span, which includes the gaps between its kernels, as
    kernel time). Idempotent; the input is left alone."""
    if not c:
        return c
    if "tokens" not in c:
        c = {**c, "tokens": None}
    if "memory" not in c:
        c = {**c, "memory": None}
    typed = as_census(c)
    clean = normalized(typed)
    if typed is None or clean is None or clean is typed:
        return c
    # the typed census's counts written back where the record keeps them, and what was taken out beside them
    out = {**c, "kernels_by_name": dict(clean.kernels_by_name or {}), "kernels": clean.kernels}
    if typed.kernel_ms is not None:
        out |= {"kernel_ms_by_name": dict(clean.kernel_ms_by_name or {}), "kernel_ms": clean.kernel_ms}
    out["annotations"] = {"count": _annotations(typed.kernels_by_name), "ms": _annotations(typed.kernel_ms_by_name)}
    return out


# ---- tolerances ---------------------------------------------------------------------------------
def _tolerance(tolerances, family: str) -> tuple[float, float]:
    """(absolute, relative) tolerance of a counter family. ``tolerances`` is None (exact), a number (absolute,
    per step, for every family), or a dict ``family -> number | "N%"`` (``"0.5%"`` is relative)."""
    if tolerances is None:
        return 0.0, 0.0
    t = tolerances.get(family, tolerances.get("default", 0)) if isinstance(tolerances, dict) else tolerances
    if isinstance(t, str) and t.strip().endswith("%"):
        return 0.0, float(t.strip()[:-1]) / 100.0
    return float(t), 0.0


def _differs(a: float | None, b: float | None, tol: tuple[float, float]) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None) and (a or b or 0) != 0
    allowed = max(tol[0], tol[1] * max(abs(a), abs(b)), 1e-9)
    return abs(b - a) > allowed


def _named_changes(base: Mapping[str, float] | None, cur: Mapping[str, float] | None, tol) -> list[Change]:
    base, cur = base or {}, cur or {}
    out = [
        Change(k, base.get(k), cur.get(k)) for k in set(base) | set(cur) if _differs(base.get(k, 0), cur.get(k, 0), tol)
    ]
    return sorted(out, key=lambda c: (-abs(c.delta), c.name))


def _tokens(c: Census) -> dict | None:
    """A census's tokens per step, ``{"real", "padded"}``; None where it did not count both."""
    counts = (c.real_tokens, c.padded_tokens)
    if any(not isinstance(x, (int, float)) for x in counts):
        return None
    return dict(zip(TOKENS, counts))


def _token_change(base: Census, cur: Census, tol) -> tuple[dict, dict] | None:
    """``(base, cur)`` token counts when either differs beyond ``tol``;
    None when they agree or a side did not count them."""
    tb, tc = _tokens(base), _tokens(cur)
    if tb is None or tc is None or not any(_differs(tb[k], tc[k], tol) for k in TOKENS):
        return None
    return tb, tc


def with_memory(c: dict | None, rec: dict) -> dict | None:
    """Census ``c`` of the run record ``rec`` with the record's peaks of memory, where it has them: they fill in a
    census recorded before it kept its own, and in a run of several ranks they are the largest of any rank where the
    census's are its own rank's. The input is left alone."""
    if not c or rec.get("peak_reserved_bytes") is None:
        return c
    return {**c, "memory": {**(c.get("memory") or {}), **{k: rec.get(k) for k in MEMORY}}}


def _memory_changes(base: Census, cur: Census) -> list[Change]:
    """The peaks of memory that moved beyond the memory verdict's tolerance; a side without one (CPU) is no change."""
    check = MemoryCheck()
    peaks = (
        ("peak_reserved_bytes", base.peak_reserved_bytes, cur.peak_reserved_bytes),
        ("peak_allocated_bytes", base.peak_allocated_bytes, cur.peak_allocated_bytes),
    )
    return [Change(k, b, c) for k, b, c in peaks if b is not None and c is not None and check.changed(b, c)]


def _usable(c: Census | None) -> str | None:
    if c is None:
        return "no census"
    if not c.fits:
        return c.reason or "window does not fit"
    return None


def _times(c: Census, on_device: bool) -> tuple[float | None, Mapping[str, float] | None]:
    """The census's time per step and its time by name: its kernels' on a device, else its aten ops' self CPU time."""
    return (c.kernel_ms, c.kernel_ms_by_name) if on_device else (c.cpu_op_ms, c.cpu_op_ms_by_name)


# ---- diff ---------------------------------------------------------------------------------------
def diff(base: Census | Mapping | None, cur: Census | Mapping | None, tolerances=None) -> CensusDiff:
    """Compare census ``cur`` with ``base`` (each a :class:`Census`, or as the worker records it). ``tolerances``: None
    (exact, the default), a number (absolute, per optimizer step, for every counter), or a dict by family
    (``ops``, ``kernels``, ``python_calls``, ``syncs``, ``alloc``, ``tokens``, ``default``) of numbers or ``"N%"``.
    Tokens compare only where both sides counted them: a census without them is not a change; so do the peaks of memory,
    within the memory verdict's tolerance (:meth:`harness.judging.stats.MemoryCheck.changed`)."""
    b, c = normalized(base), normalized(cur)
    missing = [f"{side}: {why}" for side, x in (("base", b), ("current", c)) if (why := _usable(x))]
    config = config_changes(*(None if x is None else x.details.get("config") for x in (b, c)))
    if b is None or c is None or missing:
        return CensusDiff(missing=missing, config=config)
    if b.device != c.device:
        why = f"devices differ ({b.device} -> {c.device}): censuses of different devices do not compare"
        return CensusDiff(missing=[why], config=config)
    scalars = (
        ("ops", b.ops, c.ops),
        ("kernels", b.kernels, c.kernels),
        ("python_calls", b.python_calls, c.python_calls),
    )
    counters = {k: Change(k, x, y) for k, x, y in scalars if _differs(x, y, _tolerance(tolerances, k))}
    ops = _named_changes(b.ops_by_name, c.ops_by_name, _tolerance(tolerances, "ops"))
    kernels = _named_changes(b.kernels_by_name, c.kernels_by_name, _tolerance(tolerances, "kernels"))
    syncs = _named_changes(b.sync_calls, c.sync_calls, _tolerance(tolerances, "syncs"))
    alloc = _named_changes(b.alloc_calls, c.alloc_calls, _tolerance(tolerances, "alloc"))
    on_device = b.kernel_ms is not None or c.kernel_ms is not None
    (tb, by_b), (tc, by_c) = (_times(x, on_device) for x in (b, c))
    rel = (tc / tb - 1.0) if tb and tc is not None else None
    time = sorted(_named_changes(by_b, by_c, (0.0, 0.0)), key=lambda x: (-abs(x.delta), x.name))
    ob, oc = b.allocated_by_op, c.allocated_by_op
    allocations = _named_changes(ob, oc, (0.0, 0.0)) if ob is not None and oc is not None else []
    return CensusDiff(
        counters=counters,
        ops=ops,
        kernels=kernels,
        syncs=syncs,
        alloc=alloc,
        time_key="kernel_ms" if on_device else "cpu_op_ms",
        time_total=(tb, tc, rel),
        time=time,
        memory=_memory_changes(b, c),
        allocations=allocations,
        attention=(b.attention, c.attention) if b.attention != c.attention else None,
        tokens=_token_change(b, c, _tolerance(tolerances, "tokens")),
        config=config,
    )


# ---- words --------------------------------------------------------------------------------------
def num(x: float | None) -> str:
    """``11447.0`` -> ``11,447``; ``0.25`` -> ``0.25``; None -> ``-``."""
    if x is None:
        return "-"
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.3f}".rstrip("0").rstrip(".")


def signed(x: float) -> str:
    return ("+" if x > 0 else "") + num(x) if x else "0"


def size(b: float, signed_: bool = False) -> str:
    """Bytes in the largest binary unit that keeps them above 1: ``1.15 GiB``, ``64 MiB``, ``512 B``; with a sign."""
    sign = ("+" if b > 0 else "-" if b < 0 else "") if signed_ else ("-" if b < 0 else "")
    a = abs(b)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if a >= scale:
            return f"{sign}{a / scale:.2f} {unit}"
    return f"{sign}{a:.0f} B"


def memory_lines(d: CensusDiff) -> list[str]:
    """One line per peak that moved, ``peak reserved memory: 5.75 GiB -> 4.60 GiB (-20%)``, the first followed by the
    aten ops whose allocations per step moved most (where both censuses summarised them);
    nothing where no peak moved."""
    out = [
        f"{MEMORY[c.name]}: {c.base / 2**30:.2f} GiB -> {c.cur / 2**30:.2f} GiB "
        f"({f'{c.delta / c.base:+.0%}' if c.base else size(c.delta, True)})"
        for c in d.memory
    ]
    if out and d.allocations:
        top = ", ".join(f"{_short(c.name, 50)} {size(c.delta, True)}" for c in d.allocations[:TOP_ALLOCATIONS])
        out[0] += f"; allocated per optimizer step, moved most: {top}"
    return out


def _short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _names(changes: list[Change], top: int = TOP) -> str:
    shown = ", ".join(f"{_short(c.name)} {signed(c.delta)}" for c in changes[:top])
    return shown + (f", ... ({len(changes) - top} more)" if len(changes) > top else "")


def lines(d: CensusDiff, base: Census | Mapping | None = None, cur: Census | Mapping | None = None) -> list[str]:
    """Short human lines, one per changed family, e.g.
    ``aten ops per optimizer step 5,120 -> 5,232 (+112): aten::_to_copy +112, aten::to +112``.
    ``base``/``cur`` (the censuses) fill in totals for families whose total is equal but whose names moved."""
    out = list(d.missing)
    base_c = as_census(base)
    for key in ("ops", "kernels"):
        total = d.counters.get(key)
        changes = getattr(d, key)
        if total is None and not changes:
            continue
        if total is None:
            b = getattr(base_c, key) if base_c is not None else None
            head = f"{LABELS[key]} per optimizer step {num(b)} (total unchanged)"
        else:
            head = f"{LABELS[key]} per optimizer step {num(total.base)} -> {num(total.cur)} ({signed(total.delta)})"
        out.append(head + (f": {_names(changes)}" if changes else ""))
    if "python_calls" in d.counters:
        c = d.counters["python_calls"]
        rel = f", {c.delta / c.base:+.1%}" if c.base else ""
        out.append(f"Python calls per optimizer step {num(c.base)} -> {num(c.cur)} ({signed(c.delta)}{rel})")
    for key in GROUPS:
        changes = getattr(d, key)
        if changes:
            out.append(
                f"{LABELS[key]} per optimizer step: "
                + ", ".join(f"{c.name} {num(c.base)} -> {num(c.cur)}" for c in changes)
            )
    out += memory_lines(d)
    if d.attention:
        out.append(f"attention backend {d.attention[0]} -> {d.attention[1]}")
    if d.tokens:
        tb, tc = d.tokens
        out.append("tokens per optimizer step: " + ", ".join(f"{k} {num(tb[k])} -> {num(tc[k])}" for k in TOKENS))
    if d.config:
        shown = "; ".join(f"{k}: {v0!r} -> {v1!r}" for k, v0, v1 in d.config[:TOP])
        out.append(f"config changed ({len(d.config)} keys): {shown}" + (" ..." if len(d.config) > TOP else ""))
    return out


def time_line(d: CensusDiff) -> str | None:
    """The timing change, for information only: ``kernel time per optimizer step 12.3 -> 13.1 ms (+6.5%,
    not judged)``."""
    if not d.time_total or d.time_total[0] is None or d.time_total[1] is None:
        return None
    b, c, rel = d.time_total
    label = "kernel time" if d.time_key == "kernel_ms" else "aten self CPU time"
    tops = ", ".join(f"{_short(x.name, 50)} {x.delta:+.2f}" for x in d.time[:3])
    return (
        f"{label} per optimizer step {b:.2f} -> {c:.2f} ms ({rel:+.1%}, not judged)" + (f": {tops}" if tops else "")
        if rel is not None
        else None
    )


def verdict(base: Census | Mapping | None, cur: Census | Mapping | None, tolerances=None) -> CensusVerdict:
    """Judge the counts (not the times): ``pass`` when every counter, the tokens and the attention backend are
    equal within ``tolerances`` (default: exact), ``changed`` with the lines otherwise, ``unknown`` when a side has
    no usable census. Config changes and moves of peak memory are listed in the lines but do not make the outcome
    ``changed`` (the memory verdict judges memory)."""
    base, cur = as_census(base), as_census(cur)  # read once: diff and lines take a typed census as it is
    d = diff(base, cur, tolerances)
    ls = lines(d, base, cur)
    if d.missing:
        return CensusVerdict("unknown", ls, d)
    return CensusVerdict("changed" if d.counts_changed else "pass", ls, d)
