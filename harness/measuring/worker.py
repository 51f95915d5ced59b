"""One training run in a fresh process: ``python -m harness.measuring.worker REQUEST.json RESULT.json``.

The request holds the workload, the decomposition and measurement switches. The worker writes its
record atomically to RESULT.json (status ok | oom | error) and exits 0 only when the status is ok.
A crash, a signal or a timeout leaves no result; the runner then classifies the run itself.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from statistics import median
from typing import Any

from harness import knobs
from harness.errors import BadInput
from harness.files import write_json_atomic
from harness.results.run import Run

EXIT_OK, EXIT_OOM, EXIT_ERROR = 0, 3, 4


@dataclass
class Timing:
    """The seconds a worker took to start and set up and (``train_s``) to train, the record's ``timing_s``: each is
    set once taken; a stage not reached is left out."""

    startup_s: float | None = None  # from the launch to the worker's first line
    preload_s: float | None = None  # a pre-started resident worker's imports, before it was told to go
    held_s: float | None = None  # then its wait for the go
    import_s: float | None = None
    model_build_s: float | None = None
    probe_s: float | None = None
    data_build_s: float | None = None
    trainer_setup_s: float | None = None
    train_s: float | None = None
    item_s: float | None = None  # an item of a series: the whole item
    worker_total_s: float | None = None

    def to_json(self) -> dict[str, float]:
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, float] | None) -> Timing:
        return cls(**(data or {}))


@dataclass(frozen=True)
class InjectFired:
    """The test-only injected work of a run (the record's ``inject_work_fired``): the calls that fired, the LoRA layers
    and casts per call it was set up with, its kind, and, in a census run, its calls and (device kinds) the reads that
    queued device work, per step."""

    calls: int
    layers: int
    casts_per_call: float
    kind: str
    per_step: float | None = None
    queued_per_step: float | None = None


def finished(**measured: Any) -> Run:
    """The worker's part of the record of a finished training: ``measured`` holds every key it writes, a None value
    written as null; the keys that :class:`Run` does not type go to its ``details``."""
    typed = {f.name for f in fields(Run)}
    return Run(
        status="ok",
        **{k: v for k, v in measured.items() if k in typed and v is not None},
        details={k: v for k, v in measured.items() if k not in typed or v is None},
    )


def failed(status: str, message: str, trace: str) -> Run:
    """The worker's part of the record of a training that failed with ``status`` (``oom`` or ``error``)."""
    return Run(status=status, error=message, details={"traceback": trace})


@dataclass(frozen=True)
class WorkerRequest:
    """What a worker is asked to run, as the runner (``RunRequest.as_item``) or a resident worker's parent writes it:
    the workload (its ``for_worker`` dict), the decomposition's id and the measurement switches; ``timed_steps``: a
    probe's timed steps after the warm-up; ``series``: the items of a series run, each with its own switches. A
    resident worker's also says its CPUs (``cpus``, ``hold_cpus``, ``warm_cpus``) and whether it is pre-started
    (``hold``)."""

    workload: dict
    decomposition: str
    phases: bool = True
    inject_slowdown: float = 0.0
    inject_work: float = 0
    inject_kind: str | None = None
    fault: str | None = None
    profile_steps: int = 0
    census: bool = False
    timed_steps: int = 0
    force_cpu: bool = False
    sample_interval_s: float = 0.5
    launched_at: float | None = None
    series: tuple[dict, ...] = ()
    cpus: list[int] | None = None
    hold: bool = False
    hold_cpus: list[int] | None = None
    warm_cpus: list[int] | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkerRequest:
        """The request of a request file; None values take the defaults."""
        return cls(**{k: v for k, v in data.items() if v is not None})

    def items(self) -> list[WorkerRequest]:
        """The requests of a series' items: this one's switches, overridden by each item's."""
        return [replace(self, series=(), **item) for item in self.series]


@dataclass
class Built:
    """What :func:`build_trainer` made: the trainer and the measuring objects attached to it."""

    workload: Any
    decomposition: Any
    cuda: bool
    trainer: Any
    recorder: Any
    sampler: Any = None
    profiler: Any = None
    census: Any = None
    inject: Any = None
    probe: dict | None = None
    unk_share: float | None = None  # hub or local data: the share of <unk> ids in the rows the trainer tokenized


def preload() -> float:
    """Import what :func:`build_trainer` imports, the bulk of a worker's start-up; its seconds. A pre-started resident
    worker does this while the previous launch runs."""
    t = time.perf_counter()
    import datasets  # noqa: F401
    import torch  # noqa: F401
    import trl  # noqa: F401

    from harness.measuring import build, callbacks, env  # noqa: F401

    return time.perf_counter() - t


def build_trainer(
    req: WorkerRequest,
    timing: Timing,
    outdir: str,
    *,
    measure: Callable | None = None,
    max_steps: int | None = None,
    sampler: bool = True,
) -> Built:
    """Tokenizer, model, dataset and the instrumented SFTTrainer of one request, with its callbacks; ``timing``
    gets the set-up times. Shared by a fresh run (:func:`train`) and a resident worker
    (:mod:`harness.measuring.resident`), which passes its own ``measure`` callback (a subclass of
    ``MeasureCallback``, called with the recorder), an unbounded ``max_steps`` (the Trainer cycles the data) and no
    GPU sampler (its thread would wake every 0.5 s while the other side's block is timed)."""
    t = time.perf_counter()
    import datasets
    import torch  # noqa: F401  (imported here so that import_s covers it)
    from trl import SFTTrainer

    datasets.disable_progress_bars()

    from harness.judging.census_window import census_max_steps
    from harness.measuring import build
    from harness.measuring.callbacks import (
        CudaClock,
        HostClock,
        InstrumentedMixin,
        MeasureCallback,
        Recorder,
        attach_forward_hooks,
    )
    from harness.measuring.env import worker_env  # noqa: F401  (imported here so that import_s covers it)
    from harness.measuring.gpu_monitors import GpuSampler, KernelProfiler, SamplerCallback
    from harness.spec import Workload

    timing.import_s = time.perf_counter() - t
    w = Workload.from_dict(req.workload)
    dec = w.decomposition(req.decomposition)
    cuda, device, rank = _device(w, dec, req)

    tokenizer, model, probe, dataset = _build_inputs(w, device, timing)

    t = time.perf_counter()
    recorder = Recorder(
        CudaClock() if cuda else HostClock(),
        phases=req.phases,
        slowdown=float(req.inject_slowdown),
        fault=rank_fault(req.fault, rank),
    )
    sampler = GpuSampler(req.sample_interval_s) if sampler and cuda and not req.census else None
    trainer_cls = type("InstrumentedSFTTrainer", (InstrumentedMixin, SFTTrainer), {"recorder": recorder})
    if max_steps is None and req.census:  # a workload too short for the census windows: the census run goes on
        max_steps = census_max_steps(
            w.measure.warmup_steps + int(req.timed_steps), w.train.logging_steps, w.train.max_steps
        )
    args = build.sft_config(w if max_steps is None else w.with_overrides(max_steps=max_steps), dec, outdir, device)
    trainer = trainer_cls(
        model=model, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=build.lora_config(w)
    )
    trainer.add_callback((measure or MeasureCallback)(recorder))
    if sampler is not None:
        trainer.add_callback(SamplerCallback(sampler))
    if recorder.phases:
        attach_forward_hooks(trainer.model, recorder)
    profiler = KernelProfiler(w.measure.warmup_steps, int(req.profile_steps)) if cuda and req.profile_steps else None
    if profiler is not None:
        trainer.add_callback(profiler)
    census, inject = _census_and_inject(trainer, w, req)
    unk = build.unk_share(trainer.train_dataset, tokenizer) if w.data.source != "synthetic" else None
    timing.trainer_setup_s = time.perf_counter() - t
    return Built(w, dec, cuda, trainer, recorder, sampler, profiler, census, inject, probe, unk)


def _build_inputs(w, device, timing: Timing) -> tuple[Any, Any, dict, Any]:
    """(tokenizer, model, host probe, dataset) of workload ``w`` on ``device``; ``timing`` gets the time of each."""
    from harness.measuring import build
    from harness.measuring.probe import host_probe

    t = time.perf_counter()
    tokenizer = build.build_tokenizer(w)
    model = build.build_model(w, device)
    timing.model_build_s = time.perf_counter() - t
    t = time.perf_counter()
    probe = host_probe(device)
    timing.probe_s = time.perf_counter() - t
    t = time.perf_counter()
    dataset = build.build_dataset(w, tokenizer)
    timing.data_build_s = time.perf_counter() - t
    return tokenizer, model, probe, dataset


def _device(w, dec, req: WorkerRequest) -> tuple[bool, Any, int]:
    """(cuda, device, rank) of this process; checks that the decomposition's world size is this job's and that the
    precision fits the device, and sets the CPU threads of a CPU workload."""
    import torch

    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    if dec.world_size != world:
        raise BadInput(
            f"{w.name} {dec.id}: world_size {dec.world_size} needs {dec.world_size} processes, "
            f"this one is 1 of {world} (the runner starts world sizes > 1 with torchrun)"
        )
    cuda = torch.cuda.is_available() and not req.force_cpu
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda and world > 1:
        torch.cuda.set_device(local)
    device = torch.device(f"cuda:{local}" if cuda and world > 1 else "cuda" if cuda else "cpu")
    if not cuda and w.train.precision == "fp16":
        raise BadInput(f"{w.name}: precision fp16 needs a GPU; use fp32 or bf16 for CPU workloads")
    if not cuda and w.train.cpu_threads:
        torch.set_num_threads(w.train.cpu_threads)
    return cuda, device, rank


def _census_and_inject(trainer, w, req: WorkerRequest) -> tuple[Any, Any]:
    """(census, inject) of a request, attached to ``trainer``: the census (:mod:`harness.measuring.census`) counts the
    work of steady steps, then ends the run; inject_work is test-only extra work
    (:mod:`harness.measuring.injected_work`). Either is None when not asked for."""
    census = inject = None
    if req.census or req.inject_work:
        from harness.measuring.census import CensusCallback
        from harness.measuring.injected_work import InjectWork

        # the environment's: test-only (InjectWork)
        kind = knobs.INJECT_KIND.get() or req.inject_kind or "casts"
        inject = InjectWork(trainer.model, float(req.inject_work), kind=kind) if req.inject_work else None
        if req.census:
            # with timed_steps (the advisor's probes) the census window opens after the timed steps, which stay
            # unprofiled
            census = CensusCallback(
                w.measure.warmup_steps + int(req.timed_steps),
                {"inject_work": lambda: inject.fired, "inject_queued": lambda: inject.queued} if inject else None,
                stop=True,
                tokens=lambda: trainer.recorder.token_totals,
            )
            trainer.add_callback(census)
    return census, inject


def train(req: WorkerRequest, timing: Timing) -> Run:
    """Build and train the request's trainer; the worker's part of the record of the finished training."""
    with tempfile.TemporaryDirectory(prefix="harness-run-") as outdir:
        b = build_trainer(req, timing, outdir)
        t = time.perf_counter()
        out = b.trainer.train()
        timing.train_s = time.perf_counter() - t
    from harness.measuring.census_memory import peaks  # torch is imported (and timed in import_s) by build_trainer
    from harness.measuring.env import worker_env

    w, census, inject = b.workload, b.census, b.inject
    measured = b.recorder.finish()
    warm = w.measure.warmup_steps
    end = warm + int(req.timed_steps) if req.timed_steps else None  # the steps before a probe's census window
    steady = measured.step_times_ms[warm:end]
    tokens = measured.tokens_per_step[warm:end]
    # the census carries the host probe of the process that traced it: its host time is read at that host's speed
    counted = census.result if census is not None else None
    counted = replace(counted, details={**counted.details, "host_probe": b.probe}) if counted is not None else None
    fired = (
        InjectFired(
            inject.fired,
            inject.layers,
            inject.n,
            inject.kind,
            per_step=census.counter("inject_work") if census else None,
            # device kinds: the reads per step that queued device work (each n microseconds of it)
            queued_per_step=census.counter("inject_queued") if census else None,
        )
        if inject is not None
        else None
    )
    reserved, allocated = peaks(b.cuda)
    return finished(
        train_runtime_s=float(out.metrics["train_runtime"]),
        train_loss=float(out.metrics.get("train_loss", float("nan"))),
        step_times_ms=measured.step_times_ms,
        warmup_steps=warm,
        step_time_median_ms=median(steady) if steady else None,
        phases_ms=measured.phases_ms,
        losses=measured.losses,
        tokens_per_s=(sum(tokens) / (sum(steady) / 1000.0)) if steady and sum(steady) > 0 else None,
        peak_reserved_bytes=reserved,
        peak_allocated_bytes=allocated,
        gpu_samples=b.sampler.samples if b.sampler is not None and b.sampler.available else None,
        profile=b.profiler.result if b.profiler is not None else None,
        host_probe=b.probe,
        env=worker_env(b.trainer.model),
        census=counted,
        data_digest=w.data.digest,  # local data: the content trained on (build.check_digest compared it); else None
        unk_share=b.unk_share,
        inject_work_fired=asdict(fired) if fired is not None else None,
    )


def with_timing(result: Run, timing: Timing) -> Run:
    """``result`` with the worker's times (``timing_s``)."""
    return replace(result, details={**result.details, "timing_s": timing.to_json()})


def train_series(req: WorkerRequest, result_path: str) -> Run:
    """Several short runs in this one process, one per item of ``req.series`` (each item's keys override the
    request's): the advisor's fit probes, which then pay the imports (most of a worker's start-up) once instead of once
    per split. An item that fails (out of memory above all) is recorded with its status and message, its memory is
    released, and the next item runs; the peak-memory counters restart for every item. The result, with every item
    finished so far, is rewritten after each item, so a crash or a timeout later loses none of them."""
    import gc

    items: list[dict] = []
    for sub in req.items():
        timing = Timing()
        t = time.time()
        try:
            res = train(sub, timing)
        except Exception as exc:
            res = failed(*classify(exc), traceback.format_exc()[-2000:])
        timing.item_s = time.time() - t
        # the runner heads each item's record with its request (workload, decomposition)
        items.append(with_timing(res, timing).to_json())
        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        write_json_atomic(result_path, Run(status="ok", details={"series": items, "partial": True}).to_json())
    return Run(status="ok", details={"series": items})


def rank_fault(fault: str | None, rank: int) -> str | None:
    """Test-only: ``KIND@STEP/rankR`` fires on rank R only; a fault without ``/rank`` fires on every rank."""
    if not fault or "/rank" not in fault:
        return fault
    spec, _, r = fault.partition("/rank")
    return spec if int(r) == rank else None


def result_path_of(path: str, rank: int, world: int) -> str:
    """Where a rank writes its result: the path itself for a single process, ``PATH.rankR`` for each rank of a job."""
    return path if world == 1 else f"{path}.rank{rank}"


def classify(exc: BaseException) -> tuple[str, str]:
    """(status, one-line message) of a failed training: ``oom`` or ``error``. Shared with the resident worker."""
    import torch

    from harness.measuring.build import HubUnavailable

    oom = isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()
    if isinstance(exc, HubUnavailable) or not oom and type(exc).__name__ in ("SpecError", "ValueError"):
        message = str(exc)
    else:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if oom:  # keep what was asked and what was free; the full text stays in "traceback"
            text = ". ".join(text.split(". ")[:3])
        message = f"{type(exc).__name__}: {text[:300]}"
    return ("oom" if oom else "error"), message


def main(argv: list[str]) -> int:
    t_main = time.time()
    request_path, result_path = argv
    with open(request_path) as fh:
        req = WorkerRequest.from_json(json.load(fh))
    timing = Timing(startup_s=t_main - req.launched_at if req.launched_at else None)
    try:
        result = train_series(req, result_path) if req.series else train(req, timing)
        code = EXIT_OK
    except Exception as exc:  # classified here; the runner records it
        status, message = classify(exc)
        result = failed(status, message, traceback.format_exc()[-4000:])
        print(("does not fit: " if status == "oom" else "error: ") + message, file=sys.stderr)
        code = EXIT_OOM if status == "oom" else EXIT_ERROR
    timing.worker_total_s = time.time() - t_main
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    result = with_timing(result, timing)
    result = replace(result, details={**result.details, "rank": rank})
    write_json_atomic(result_path_of(result_path, rank, world), result.to_json())
    return code


if __name__ == "__main__":
    if "TORCHELASTIC_RUN_ID" in os.environ:  # a rank of torchrun: it dies with torchrun, which dies with the harness
        from harness.measuring.lifeline import die_with_parent

        die_with_parent()
    from harness.measuring.ending import end

    end(main(sys.argv[1:]))
