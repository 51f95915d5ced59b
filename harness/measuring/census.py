"""The census: count the work of an optimizer step, which does not depend on how fast the machine is.

:class:`CensusCallback` profiles a window of whole logging periods with ``torch.profiler`` (CPU, and
CUDA when there is one) and counts, per optimizer step: aten operators, CUDA kernel launches,
synchronising CUDA runtime calls and memcpys, allocator calls (the profiler's events are summarised by
:mod:`harness.measuring.census_counts`), the tokens the steps consumed (real and padded, from the batches the
timing already counts), the run's peak device memory and the bytes each aten op allocated in the window (the profiler's
memory events, :mod:`harness.measuring.census_memory`), and, in a second window of the same length right after the
first, Python function calls (:class:`PythonCalls`). It also records the resolved training configuration
(:func:`resolved_config`) and the SDPA backend that actually ran. Every key is described in ``docs/measurement.md``
("Census"); ``harness/judging/census_diff.py`` compares two censuses without torch.

Window: the first ``start`` optimizer steps are skipped, ``start`` being ``[measure] warmup_steps``
rounded up to a multiple of the Trainer's logging period, so the window opens at a logging boundary;
it then covers ``n`` steps, ``n`` a whole number of logging periods and at least 3. The profiler starts
in ``on_step_end`` of step ``start`` and stops in ``on_step_end`` of step ``start + n``: it covers the
logging of step ``start`` (the Trainer logs right after ``on_step_end``) and the ``n`` steps after it,
so exactly ``n / logging_steps`` logging events (loss ``.item()``: a device-to-host copy and a sync).
Per-step figures are window totals divided by ``n``: averages over whole logging periods, in which a
logging step does more work than the others. Each step's end in the window is marked in the trace (a
``record_function`` range, :data:`harness.measuring.timeline.STEP_MARK`), so that the timeline says each step's wall
and device busy time (``timeline.steps``).

This module imports torch and transformers: only the worker imports it.
"""

from __future__ import annotations

import enum
import math
import sys
import threading
import time
from dataclasses import dataclass

import torch
from transformers import TrainerCallback

from harness.judging.census_window import WindowPlan, window_plan
from harness.measuring import census_memory
from harness.measuring.census_counts import summarize
from harness.measuring.probe import host_probe
from harness.measuring.timeline import STEP_MARK
from harness.results.census import Census

# Arguments that name this run rather than configure it.
VOLATILE_ARGS = (
    "output_dir",
    "logging_dir",
    "run_name",
    "hub_model_id",
    "hub_token",
    "push_to_hub_token",
    "trackio_space_id",
    "project",
)


def jsonable(v):
    """Plain JSON values: sets become sorted lists, enums their values, anything else its ``str``."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (set, frozenset)):
        return sorted((jsonable(x) for x in v), key=lambda x: (str(type(x)), str(x)))
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, enum.Enum):
        return jsonable(v.value)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def resolved_config(args, model) -> dict:
    """The configuration the run actually used: the Trainer's arguments (``to_dict``, minus the keys that
    name the run), the attention implementation, gradient checkpointing as set on the modules, the PEFT
    config, and the torch switches that choose kernels."""
    a = args.to_dict()
    for k in VOLATILE_ARGS:
        a.pop(k, None)
    base = model
    for attr in ("get_base_model",):  # PeftModel -> the transformers model
        if hasattr(base, attr):
            base = getattr(base, attr)()
    cfg = getattr(base, "config", None)
    ckpt_modules = [m for m in base.modules() if hasattr(m, "gradient_checkpointing")]
    funcs = {getattr(m, "_gradient_checkpointing_func", None) for m in ckpt_modules} - {None}
    func = next(iter(funcs), None)
    peft = getattr(model, "peft_config", None) or {}
    import torch.utils.checkpoint as tuc

    return jsonable(
        {
            "args": a,
            "attn_implementation": getattr(cfg, "_attn_implementation", None),
            "dtype": str(getattr(base, "dtype", None)),
            "checkpointing": {
                "enabled": bool(getattr(base, "is_gradient_checkpointing", False)),
                "layers": sum(1 for m in ckpt_modules if getattr(m, "gradient_checkpointing", False)),
                "modules": len(ckpt_modules),
                "func": getattr(getattr(func, "func", func), "__qualname__", None) if func is not None else None,
                "kwargs": dict(getattr(func, "keywords", {}) or {}),
                "early_stop": getattr(tuc, "_enable_checkpoint_early_stop", None),
            },
            "peft": {name: c.to_dict() for name, c in peft.items()},
            "torch": {
                "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
                "cudnn_tf32": torch.backends.cudnn.allow_tf32,
                "float32_matmul_precision": torch.get_float32_matmul_precision(),
                "sdp": {
                    "flash": torch.backends.cuda.flash_sdp_enabled(),
                    "efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                    "math": torch.backends.cuda.math_sdp_enabled(),
                    "cudnn": getattr(torch.backends.cuda, "cudnn_sdp_enabled", lambda: None)(),
                },
            },
        }
    )


# The threads whose calls a census leaves out while their id is here. Added and removed with set.add / set.discard and
# threading.get_ident, which are C functions: entering and leaving adds no Python call to the count.
UNCOUNTED_THREADS: set[int] = set()


class PythonCalls:
    """Counts Python function calls: ``sys.monitoring`` PY_START events on Python >= 3.12 (every thread;
    generator resumptions are not calls), else ``sys.setprofile`` / ``threading.setprofile`` ``'call'``
    events (the calling thread and threads started while counting; a generator resumption counts as a
    call). ``method`` says which. Calls made by a thread while its id is in :data:`UNCOUNTED_THREADS` are not
    counted: the harness's own bookkeeping during a step is not the step's work."""

    def __init__(self):
        self.count = 0
        self.method = "sys.monitoring" if hasattr(sys, "monitoring") else "sys.setprofile"
        self._tool = None
        self._prev = None

    def _on_call(self, frame, event, arg):
        if event == "call" and (not UNCOUNTED_THREADS or threading.get_ident() not in UNCOUNTED_THREADS):
            self.count += 1

    def _on_start(self, code, offset):
        if not UNCOUNTED_THREADS or threading.get_ident() not in UNCOUNTED_THREADS:
            self.count += 1

    def start(self) -> None:
        if self.method == "sys.monitoring":
            mon = sys.monitoring
            self._tool = next(t for t in (mon.PROFILER_ID, 3, 4) if mon.get_tool(t) is None)
            mon.use_tool_id(self._tool, "harness-census")
            mon.register_callback(self._tool, mon.events.PY_START, self._on_start)
            mon.set_events(self._tool, mon.events.PY_START)
        else:
            self._prev = sys.getprofile()
            threading.setprofile(self._on_call)
            sys.setprofile(self._on_call)

    def stop(self) -> int:
        if self.method == "sys.monitoring":
            mon = sys.monitoring
            mon.set_events(self._tool, 0)
            mon.register_callback(self._tool, mon.events.PY_START, None)
            mon.free_tool_id(self._tool)
        else:
            sys.setprofile(self._prev)
            threading.setprofile(None)
        return self.count


@dataclass
class _Marks:
    """What a census read at its windows' edges: the host probe, the counters and token totals at the op window's start
    (``0``) and end (``1``), its wall time, and the Python calls of the window after it with their wall time."""

    probe: dict | None = None
    counters0: dict | None = None
    counters1: dict | None = None
    tokens0: dict | None = None
    tokens1: dict | None = None
    t0: float = 0.0
    t1: float = 0.0
    wall_ms: float = 0.0
    python_calls: int | None = None
    python_wall_ms: float | None = None


class CensusCallback(TrainerCallback):
    """Counts the work of ``n`` optimizer steps after the warm-up (module docstring). ``counters``: extra
    ``name -> callable() -> int`` read at the window's edges; their per-step deltas land in the census's ``counters``
    (:meth:`counter`). ``tokens``: a callable that returns the running totals ``{"real": int, "padded": int}``
    of the tokens fetched so far (``token_totals`` of :class:`harness.measuring.callbacks.Recorder`), read at the same
    edges; their per-step deltas land in the census's ``tokens`` (None without it). ``result``, the
    :class:`~harness.results.census.Census`, is set at ``on_train_end``."""

    def __init__(
        self,
        warmup_steps: int,
        counters: dict | None = None,
        python_calls: bool = True,
        stop: bool = False,
        tokens=None,
    ):
        self.warmup_steps = warmup_steps
        self.stop = stop  # end the training once the windows are counted: a census run is short
        self.counters = counters or {}
        self.tokens = tokens
        self.python_calls = python_calls
        self.cuda = torch.cuda.is_available()
        self.plan: WindowPlan | None = None
        self.config: dict | None = None
        self.prof = None
        self.profiled = False
        self.py: PythonCalls | None = None
        self._marks = _Marks()
        self.counters_per_step: dict[str, float] = {}  # a fitted window's counters, per step
        self.result: Census | None = None

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        period = state.logging_steps if args.logging_strategy == "steps" and state.logging_steps else 1
        self.plan = window_plan(self.warmup_steps, int(period), int(state.max_steps))
        try:
            self.config = resolved_config(args, model) if model is not None else None
        except Exception as exc:  # the counts stay useful without it
            self.config = {"error": f"{type(exc).__name__}: {exc}"}

    def on_step_end(self, args, state, control, **kwargs):
        p, step = self.plan, state.global_step
        if p is None or not p.fits:
            return
        start, n = p.start, p.n
        if start < step <= start + n and self.prof is not None and not self.profiled:
            with torch.profiler.record_function(STEP_MARK):  # the step's end, in the trace: per-step device time
                pass
        if step == start and self.prof is None:
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
            self._sync()
            # the host's speed next to the traced window, where the run's own probe is read after the model's build
            self._marks.probe = host_probe(
                torch.device("cuda", torch.cuda.current_device()) if self.cuda else torch.device("cpu")
            )
            self._marks.counters0 = {k: f() for k, f in self.counters.items()}
            self._marks.tokens0 = dict(self.tokens()) if self.tokens else None
            self.prof = profile(
                activities=acts, profile_memory=True
            )  # its memory events are kept apart from the counts
            self.prof.start()
            self._marks.t0 = time.perf_counter()
        elif step == start + n and self.prof is not None and not self.profiled:
            self._sync()
            self._marks.wall_ms = (time.perf_counter() - self._marks.t0) * 1000.0
            self.prof.stop()
            self.profiled = True
            self._marks.counters1 = {k: f() for k, f in self.counters.items()}
            self._marks.tokens1 = dict(self.tokens()) if self.tokens else None
            if self.python_calls and p.python_fits:
                self.py = PythonCalls()
                self._marks.t1 = time.perf_counter()
                self.py.start()
        elif step == start + 2 * n and self.py is not None and self._marks.python_calls is None:
            self._marks.python_calls = self.py.stop()
            self._marks.python_wall_ms = (time.perf_counter() - self._marks.t1) * 1000.0
        if self.stop and step >= start + (2 * n if self.python_calls and p.python_fits else n):
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        if self.py is not None and self._marks.python_calls is None:  # training ended inside the window
            self.py.stop()
        self.result = self.finish()

    def counter(self, name: str) -> float | None:
        """The per-step delta of the counter ``name`` over a fitted window; None without one."""
        return self.counters_per_step.get(name)

    def finish(self) -> Census:
        return Census.from_json(self._written())

    def _written(self) -> dict:
        """The census as the run record holds it (``docs/measurement.md``, "Census")."""
        p = self.plan
        start, n = (p.start, p.n) if p is not None else (None, None)
        head = {
            "fits": p is not None and p.fits,
            "device": "cuda" if self.cuda else "cpu",
            "logging_steps": p.logging_steps if p is not None else None,
            "steps": [start + 1, start + n] if p is not None else None,
            "n": n,
        }
        if p is None or not p.fits or not self.profiled:
            return {
                **head,
                "fits": False,
                "reason": (p.reason if p is not None else None) or "the profiled window did not complete",
                "config": self.config,
            }
        mem, events = census_memory.split(self.prof.profiler.kineto_results.events())
        counts = summarize(events, n, self.cuda)
        reserved, allocated = census_memory.peaks(self.cuda)
        self.prof = None
        m = self._marks
        self.counters_per_step = {k: round((m.counters1[k] - m.counters0[k]) / n, 4) for k in m.counters0}
        window = dict(counts["window"])
        tokens = None
        if m.tokens0 is not None:
            tokens = {k: round((m.tokens1[k] - m.tokens0[k]) / n, 4) for k in m.tokens0}
            window |= {"tokens": {k: m.tokens1[k] - m.tokens0[k] for k in m.tokens0}}
        if m.python_calls is not None:
            python = {
                "python_calls": round(m.python_calls / n, 4),
                "python_method": self.py.method,
                "python_steps": [start + n + 1, start + 2 * n],
            }
            window |= {"python_calls": m.python_calls}
        else:
            python = {
                "python_calls": None,
                "python_method": None,
                "python_steps": None,
                "python_reason": p.python_reason
                or ("not counted" if not self.python_calls else "window did not complete"),
            }
        return {
            **head,
            **counts,
            "window": window,
            "memory": {
                "peak_reserved_bytes": reserved,
                "peak_allocated_bytes": allocated,
                **census_memory.allocations(mem, events, n, self.cuda),
            },
            "counters": self.counters_per_step,
            "tokens": tokens,
            **python,
            "overhead": {
                "profiled_ms": round(m.wall_ms / n, 2),
                "python_counted_ms": round(m.python_wall_ms / n, 2) if m.python_wall_ms is not None else None,
            },
            "window_probe": m.probe,
            "config": self.config,
        }
