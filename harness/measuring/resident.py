"""Resident workers: one process per side builds its trainer once, then trains in blocks of k optimizer steps on command.

``python -m harness.measuring.resident REQUEST.json CMD_FD REPORT_FD`` is the worker; the parent drives it
through a :class:`ResidentWorker`. The two talk over two dedicated pipes, one JSON object per line
(commands in on CMD_FD, reports out on REPORT_FD), never over stdout or stderr, where libraries print:
those go to the worker's log file.

The worker builds exactly what a fresh run builds (:func:`harness.measuring.worker.build_trainer`, the
same request keys: workload, decomposition, phases, inject_slowdown, inject_work, fault, force_cpu) with
``max_steps`` unbounded, so the Trainer cycles the dataset for as long as the parent asks. Its measuring
callback is a :class:`~harness.measuring.callbacks.MeasureCallback` that also gates the loop:

* at ``on_train_begin`` it reports ``ready`` (set-up times, host probe, environment) and waits;
* a command ``{"cmd": "block", "k": K}`` times a fixed host canary loop (:func:`canary`), restarts the
  step clock and lets the Trainer run K optimizer steps;
* at ``on_step_end`` of the K-th step it synchronizes CUDA when there is one (before that step's time
  is taken), reports the block (per-step host wall times in ms, the canary, wall and CPU time, how many
  CPUs the rest of the machine kept busy meanwhile (``other_cpus``, from /proc/stat), per-step phases and
  losses, and on a GPU one NVML reading taken as the block ends: ``gpu``, its SM clock, power, temperature and
  clock-event reasons) as one line, and waits again, still inside ``on_step_end``;
* ``{"cmd": "block", "k": K, "micro": true}`` (the micro grain of ``interleave --grain micro``): K micro-batches of
  gradient accumulation instead of K steps; the wait is then also at ``on_substep_end``, which the Trainer calls after
  each micro-batch but the last of a step (that one ends at ``on_step_end``, its optimizer step included), and the
  report's one step time is the block's synchronized wall time (the recorder's steps span the waits: no phases);
* ``{"cmd": "stop"}``, or the end of the command pipe (the parent is gone), ends training cleanly.

The wait sits at the boundary between two steps, after one step's end and before the Trainer's logging
of that step and the next step's data fetch. So a block's first step spans exactly what any step spans in
a normal run (the previous step's logging, its own data fetch, forward, backward, optimizer), and the
worker does nothing at all while it waits: when the parent releases the other side, this one is idle.
(Waiting in ``on_step_begin`` instead would leave the logging and data fetch outside every timed
window, running while the other side's block is timed.)

Both sides run glibc malloc with fixed thresholds (:data:`STABLE_MALLOC`; ``malloc_default`` turns it
off): with glibc's moving thresholds each process settles into its own rate of page faults, which made
two processes of one build differ by up to 20% on the CPU runner.

**Pre-start** (``hold_cpus``): most of a worker's start-up is importing torch, transformers, trl and peft (20 s
of 23-27 s per launch on the H200 with both workers on one CPU). A pre-started worker does that on ``hold_cpus``
(CPUs the measured workers do not use) while the previous launch runs, reports ``held`` and waits; on
:meth:`ResidentWorker.release` (``{"cmd": "go"}``) it moves all its threads to its own ``cpus`` and builds its
trainer, the only part of the start-up left in the launch. Each launch is still a fresh process of its own.

**Warm apart** (``warm_cpus``): a worker given CPUs of its own for its start builds its trainer and runs its warm-up
blocks there, so that the two sides of a launch do both at once instead of in turn on the one measured CPU; then
``{"cmd": "pin"}`` (:meth:`ResidentWorker.pin_home`), answered by ``{"event": "pinned", "cpus": [...]}``, moves all its
threads to ``cpus`` before its first measured block. Warm-up blocks are never judged, so where they ran does not matter.

The parent never imports torch. A worker runs in its own process group, killed on :meth:`ResidentWorker.close`,
on any exception (Ctrl-C, and SIGTERM under :func:`harness.measuring.runner.sigterm_as_interrupt`) and on
a timeout, exactly as :func:`harness.measuring.runner.run_one` does; a worker whose parent dies without
cleaning up (SIGKILL) sees the end of its command pipe and stops by itself after its current block.
A worker that dies raises :class:`WorkerDied`, one line with the last line of its log.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from harness.files import new_id, write_json_atomic
from harness.measuring.runner import _tail, kill_group, worker_environ
from harness.spec import Decomposition, Workload

UNBOUNDED_STEPS = 10**9  # max_steps of a resident trainer: it stops on command, never by itself
CANARY_ITERATIONS = 50_000  # about 1-2 ms of plain Python on a current host
STOP_GRACE_S = 60.0  # how long close() waits for a clean stop before it kills the group
# glibc malloc with fixed thresholds. By default glibc moves its mmap threshold as the process frees large
# chunks and trims the heap top back to the OS, so each process settles into its own mix of mmap/munmap
# and page faults per step: on the 2-core CPU runner, processes of one build differed by up to 20% in
# step time and 0.2-0.45 s of system time per 30 steps (docs/results/interleave-cpu/). Fixed thresholds
# (a constant 32 MiB mmap threshold, no trimming below 1 GiB, the heap grown 64 MiB at a time) made the
# system time ~0 and cut the launch-to-launch spread; both sides get the same setting.
STABLE_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_TOP_PAD_": str(64 << 20)}


def canary(n: int = CANARY_ITERATIONS) -> float:
    """Milliseconds of a fixed plain-Python loop: how fast this host runs the interpreter right now."""
    t = time.perf_counter()
    acc = 0
    for i in range(n):
        acc += i
    return (time.perf_counter() - t) * 1000.0


def host_cpu_times() -> tuple[float, float] | None:
    """(busy, steal) seconds of the whole machine so far, from /proc/stat (Linux); None elsewhere. Busy is every
    non-idle state, steal included: CPU time taken from this VM by its host."""
    try:
        with open("/proc/stat") as fh:
            f = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    steal = f[7] if len(f) > 7 else 0
    return (sum(f[:8]) - idle) / hz, steal / hz


# ------------------------------------------------------------------------------------------------
# Worker side (imports torch)
# ------------------------------------------------------------------------------------------------
class _Channel:
    def __init__(self, cmd_fd: int, rep_fd: int):
        self.cmd = os.fdopen(cmd_fd, "r", encoding="utf-8")
        self.rep = os.fdopen(rep_fd, "w", encoding="utf-8")

    def send(self, obj: dict) -> None:
        self.rep.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.rep.flush()

    def recv(self) -> dict | None:
        """The next command; None at the end of the pipe (the parent closed it or died)."""
        line = self.cmd.readline()
        return json.loads(line) if line.strip() else None


def _gate_class():
    import torch

    from harness.measuring.callbacks import CudaClock, GpuSampler, MeasureCallback

    class BlockGate(MeasureCallback):
        """MeasureCallback that runs the Trainer in blocks of k steps on the parent's command (module docstring)."""

        def __init__(self, recorder, channel: _Channel, home_cpus: list[int] | None = None):
            super().__init__(recorder)
            self.chan = channel
            self.home_cpus = home_cpus  # where the "pin" command moves a worker that warmed up apart
            self.cuda = isinstance(recorder.clock, CudaClock)
            self.nvml = GpuSampler() if self.cuda else None  # one reading at each block's end, no thread
            self.info: dict = {}  # sent with "ready"; filled in by main() once the trainer is built
            self.left = 0  # steps (micro-batches, with ``micro``) left in the current block
            self.micro = False  # the current block counts micro-batches (on_substep_end and on_step_end), not steps
            self.blocks = 0
            self.inject = None  # the InjectWork of this worker, when it has one (set after the build)
            self._k = self._canary = self._t0 = self._cpu0 = self._wall0 = self._host0 = self._inject0 = None

        def on_train_begin(self, args, state, control, **kwargs):
            super().on_train_begin(args, state, control, **kwargs)
            from harness.measuring.env import worker_env

            self.chan.send({"event": "ready", **self.info, "env": worker_env(kwargs.get("model"))})
            self._wait(control)

        def on_substep_end(self, args, state, control, **kwargs):
            """A micro-batch of a gradient-accumulation step has ended: the end of a micro-grain unit (``micro``)."""
            if not self.micro or self.left <= 0:
                return
            if self.left == 1 and self.cuda:
                torch.cuda.synchronize()
            self.left -= 1
            if self.left == 0:
                self._report(state, step_end=False)
                self._wait(control)

        def on_step_end(self, args, state, control, **kwargs):
            if self.left <= 0:  # a step outside any block: only the one after a stop at train begin
                return super().on_step_end(args, state, control, **kwargs)
            if self.left == 1 and self.cuda:
                torch.cuda.synchronize()  # the block ends when the device has finished its last step
            super().on_step_end(args, state, control, **kwargs)
            self.left -= 1
            if self.left == 0:
                self._report(state)
                self._wait(control)

        def _report(self, state, step_end: bool = True) -> None:
            wall = time.perf_counter() - self._t0
            cpu = time.process_time() - self._cpu0
            host = host_cpu_times()
            other = steal = None
            if host is not None and self._host0 is not None and wall > 0:
                # CPUs kept busy by everything else on the machine during the block, on average (0: a quiet machine)
                other = max(0.0, (host[0] - self._host0[0] - cpu) / wall)
                steal = (host[1] - self._host0[1]) / wall
            if self.micro:  # a unit of micro-batches: its own synchronized wall time; the recorder's steps span the waits
                got = {"step_times_ms": [wall * 1000.0], "phases_ms": None, "losses": self.rec.drain()["losses"] if step_end else []}
            else:
                got = self.rec.drain()
            self.blocks += 1
            self.chan.send({"event": "block", "k": self._k, "gpu": self._gpu(), "step_times_ms": got["step_times_ms"], "canary_ms": self._canary,
                            "wall_s": wall, "cpu_s": cpu, "started_at": self._wall0, "global_step": state.global_step,
                            "other_cpus": other, "steal_cpus": steal, "phases_ms": got["phases_ms"], "losses": got["losses"]}
                           | ({"inject_ms": (self.inject.spent_s - self._inject0) * 1000.0 / self._k} if self.inject is not None else {}))

        def _gpu(self) -> dict | None:
            """The GPU as the block ends, just after its last step synchronized: SM clock, power, temperature, utilisation,
            clock-event reasons (NVML; None without it). Read after the block's clocks stopped, so it costs the block nothing."""
            if self.nvml is None or not self.nvml.available:
                return None
            try:
                g = self.nvml.sample()
            except Exception:  # a failed read is a missing reading, never a failed block
                return None
            g.pop("t_s", None)
            return g

        def _wait(self, control) -> None:
            msg = self.chan.recv()
            while msg is not None and msg.get("cmd") == "pin":  # home to the measured CPUs after a warm-up apart
                if self.home_cpus:
                    pin(self.home_cpus)
                self.chan.send({"event": "pinned", "cpus": sorted(os.sched_getaffinity(0))})
                msg = self.chan.recv()
            if msg is None or msg.get("cmd") == "stop":
                control.should_training_stop = True
                return
            if msg.get("cmd") != "block" or int(msg.get("k", 0)) < 1:
                raise ValueError(f"resident worker: unknown command {msg!r}; expected block with k >= 1, pin, or stop")
            if msg.get("inject") is not None:  # the amount of injected work for this block (calibrated by the parent)
                if self.inject is None:
                    raise ValueError("resident worker: a block asks for injected work, but this worker was started without it")
                self.inject.n, self.inject.keep = float(msg["inject"]), True
            self._k = self.left = int(msg["k"])
            was_micro, self.micro = self.micro, bool(msg.get("micro"))
            if not was_micro:  # in micro grain the recorder's step spans several units: drained at its end only
                self.rec.drain()  # nothing from outside a block leaks into it
            self._canary = canary()
            self._wall0, self._cpu0, self._host0 = time.time(), time.process_time(), host_cpu_times()
            self._inject0 = self.inject.spent_s if self.inject is not None else None
            self._t0 = time.perf_counter()
            self.rec.resume()

    return BlockGate


def _torch_threads() -> int | None:
    """torch's intra-op threads in this process (a pre-started worker must match a fresh one: one per pinned CPU)."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None


def pin(cpus: list[int]) -> None:
    """Every thread of this process onto ``cpus`` (``sched_setaffinity(0)`` would move the calling thread only)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, OSError):  # a thread that ended meanwhile
            pass


def main(argv: list[str]) -> int:
    from harness.measuring.worker import EXIT_ERROR, EXIT_OOM, build_trainer, classify, preload

    t_main = time.time()
    request_path, cmd_fd, rep_fd = argv
    with open(request_path) as fh:
        req = json.load(fh)
    chan = _Channel(int(cmd_fd), int(rep_fd))
    timing = {"startup_s": t_main - req["launched_at"]} if req.get("launched_at") else {}
    if req.get("hold"):  # pre-started: import on other CPUs while the previous launch runs, then wait for "go"
        if req.get("hold_cpus"):
            pin(req["hold_cpus"])
        timing["preload_s"] = preload()
        try:
            chan.send({"event": "held", "preload_s": timing["preload_s"]})
            msg = chan.recv()
        except BrokenPipeError:
            return EXIT_ERROR
        if msg is None or msg.get("cmd") == "stop":  # the parent is gone, or needs no further launch
            return 0
        if msg.get("cmd") != "go":
            raise ValueError(f"resident worker: unknown command {msg!r} while held; expected go or stop")
        timing["held_s"] = time.time() - t_main - timing["preload_s"]
        t_main = time.time()
    if req.get("warm_cpus"):  # warm apart: build and warm up on CPUs of its own, beside the other side; "pin" moves it home
        pin(req["warm_cpus"])
    elif req.get("cpus"):  # pinned: both sides on the same CPU(s), so that neither gets a faster or a quieter core
        pin(req["cpus"])
    gates = []

    def gate(recorder):
        gates.append(_gate_class()(recorder, chan, req.get("cpus")))
        return gates[0]

    try:
        with tempfile.TemporaryDirectory(prefix="harness-resident-") as outdir:
            built = build_trainer(req, timing, outdir, measure=gate, max_steps=UNBOUNDED_STEPS, sampler=False)
            gates[0].inject = built.inject
            gates[0].info = {"timing_s": timing, "host_probe": built.probe, "cuda": built.cuda, "cpus": sorted(os.sched_getaffinity(0)),
                             "torch_threads": _torch_threads(),
                             "malloc": {k: os.environ.get(k) for k in STABLE_MALLOC},
                             "inject_work_layers": built.inject.layers if built.inject is not None else None}
            built.trainer.train()
        chan.send({"event": "stopped", "blocks": gates[0].blocks, "worker_total_s": time.time() - t_main})
        return 0
    except BrokenPipeError:  # the parent is gone: nobody to tell
        return EXIT_ERROR
    except Exception as exc:
        status, message = classify(exc)
        print(traceback.format_exc(), file=sys.stderr)
        print(("does not fit: " if status == "oom" else "error: ") + message, file=sys.stderr)
        try:
            chan.send({"event": "error", "status": status, "error": message})
        except OSError:
            pass
        return EXIT_OOM if status == "oom" else EXIT_ERROR


# ------------------------------------------------------------------------------------------------
# Parent side (no torch)
# ------------------------------------------------------------------------------------------------
class WorkerDied(RuntimeError):
    """A resident worker failed, died or stopped answering. ``str(err)`` is one line; ``tail`` is its log tail;
    ``oom`` is true when the worker ran out of (GPU) memory."""

    def __init__(self, message: str, tail: str = "", log: str | None = None, oom: bool = False):
        super().__init__(message)
        self.tail, self.log, self.oom = tail, log, oom


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(empty log)"


class ResidentWorker:
    """The parent's handle on one resident worker: ``start()``, ``block(k) -> dict``, ``close()``; a context manager.

    ``block(k)`` returns the worker's report (``step_times_ms``, ``canary_ms``, ``wall_s``, ``cpu_s``,
    ``started_at``, ``phases_ms``, ``losses``, ``global_step``). Every failure kills the worker's process
    group and raises :class:`WorkerDied` (its ``str`` is one line); Ctrl-C and SIGTERM kill it too.
    """

    def __init__(self, name: str, workload: Workload, decomposition: Decomposition, work_dir: str | Path, *, gpu: str,
                 launch: int = 1, python: str | None = None, phases: bool = True, inject_slowdown: float = 0.0, inject_work: int = 0,
                 fault: str | None = None, cpus: list[int] | None = None, malloc_default: bool = False, timeout_s: float = 1800.0,
                 hold_cpus: list[int] | None = None, inject_kind: str = "casts", warm_cpus: list[int] | None = None):
        self.name, self.workload, self.decomposition, self.gpu, self.launch = name, workload, decomposition, gpu, launch
        self.python, self.phases, self.inject_slowdown, self.inject_work, self.fault = python, phases, inject_slowdown, inject_work, fault
        self.timeout_s, self.cpus, self.malloc_default = timeout_s, list(cpus) if cpus else None, malloc_default
        self.hold_cpus = list(hold_cpus) if hold_cpus else None  # pre-start: import there, build on release()
        self.inject_kind = inject_kind  # casts, or host work (InjectWork kind)
        self.warm_cpus = list(warm_cpus) if warm_cpus else None  # build and warm up there; pin_home() then moves it to cpus
        self.released_at: float | None = None
        self.held: dict | None = None
        self.work_dir = Path(work_dir)
        self.id = new_id(f"{name.lower()}{launch}")
        self.log_path = self.work_dir / f"{self.id}.log"
        self.req_path = self.work_dir / f"{self.id}.request.json"
        self.proc: subprocess.Popen | None = None
        self.ready: dict | None = None
        self.exit_code: int | None = None
        self.started_at: float | None = None
        self.blocks = 0
        self.stopped_cleanly = False
        self._cmd = self._rep = None
        self._buf = b""

    @property
    def label(self) -> str:
        return f"resident worker {self.name} (launch {self.launch})"

    # -- life cycle --
    def start(self, wait: bool = True) -> ResidentWorker:
        """Launch the worker; with ``wait``, also wait for it to be ready (:meth:`wait_ready`)."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.req_path, {"workload": self.workload.to_dict(), "decomposition": self.decomposition.id, "phases": self.phases,
                                          "inject_slowdown": self.inject_slowdown, "inject_work": self.inject_work, "fault": self.fault,
                                          "inject_kind": self.inject_kind, "force_cpu": self.gpu == "cpu", "cpus": self.cpus, "launched_at": time.time()}
                          | ({"hold": True, "hold_cpus": self.hold_cpus} if self.hold_cpus else {})
                          | ({"warm_cpus": self.warm_cpus} if self.warm_cpus else {}))
        cmd_r, cmd_w = os.pipe()
        rep_r, rep_w = os.pipe()
        self.started_at = time.time()
        try:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen([self.python or sys.executable, "-m", "harness.measuring.resident", str(self.req_path), str(cmd_r), str(rep_w)],
                                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.environ(),
                                             start_new_session=True, pass_fds=(cmd_r, rep_w))
        except BaseException:
            for fd in (cmd_r, cmd_w, rep_r, rep_w):
                os.close(fd)
            raise
        os.close(cmd_r)
        os.close(rep_w)
        if self.hold_cpus:  # the interpreter's own start-up too, not only the imports in main(), off the measured CPUs
            try:
                os.sched_setaffinity(self.proc.pid, self.hold_cpus)
            except OSError:
                pass
        self._cmd, self._rep = cmd_w, rep_r
        if wait:
            self.wait_ready()
        return self

    def environ(self) -> dict[str, str]:
        """The worker's environment: a fresh worker's (:func:`harness.measuring.runner.worker_environ`) plus
        :data:`STABLE_MALLOC` unless ``malloc_default``."""
        env = worker_environ(self.gpu)
        if not self.malloc_default:
            env.update(STABLE_MALLOC)
        if (self.hold_cpus or self.warm_cpus) and self.cpus:  # OpenMP sizes its pool from the CPUs it sees when torch loads: the hold CPUs
            for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # of a pre-started worker. 14 threads on one CPU made a
                env.setdefault(var, str(len(self.cpus)))      # trainer's set-up 35 s instead of 2.5 s on the H200
        return env

    def release(self) -> None:
        """A pre-started worker (``hold_cpus``): wait until it has imported, then let it build its trainer on its own
        CPUs; :meth:`wait_ready` then waits for the build only."""
        if self.hold_cpus and self.released_at is None:
            self.held = self._guarded(lambda: self._expect("held", "while pre-starting"))
            self._guarded(lambda: self._send({"cmd": "go"}, "while releasing it"))
            self.released_at = time.time()

    def wait_ready(self) -> dict:
        """Wait until the worker has built its trainer; its ``ready`` report (set-up times, probe, env). ``startup_wall_s``
        counts from :meth:`release` for a pre-started worker."""
        if self.ready is None:
            self.release()
            self.ready = self._guarded(lambda: self._expect("ready", "while starting"))
            self.ready["startup_wall_s"] = time.time() - (self.released_at or self.started_at)
            if self.held is not None:
                self.ready["prestarted"] = {"preload_s": self.held.get("preload_s"), "held_wall_s": self.released_at - self.started_at}
        return self.ready

    def block(self, k: int, inject: float | None = None, micro: bool = False) -> dict:
        """Run ``k`` optimizer steps now (with ``inject`` casts of injected work per LoRA forward, when given); the block's report.
        With ``micro``, ``k`` micro-batches of gradient accumulation instead (the last one of a step includes its optimizer
        step); the report's ``step_times_ms`` is then the one synchronized wall time of those micro-batches."""
        self.send_block(k, inject, micro)
        return self.recv_block()

    def send_block(self, k: int, inject: float | None = None, micro: bool = False) -> None:
        """Start a block (:meth:`block`) without waiting for it: two workers warming up apart run theirs at once."""
        if k < 1:
            raise ValueError(f"block needs k >= 1, got {k}")
        self.wait_ready()
        self._guarded(lambda: self._send({"cmd": "block", "k": int(k)} | ({"inject": float(inject)} if inject is not None else {})
                                         | ({"micro": True} if micro else {}), f"before block {self.blocks + 1}"))

    def recv_block(self) -> dict:
        """The report of the block started by :meth:`send_block`."""
        rep = self._guarded(lambda: self._expect("block", f"during block {self.blocks + 1}"))
        self.blocks += 1
        return rep

    def pin_home(self) -> list[int]:
        """Move a worker that built and warmed up on ``warm_cpus`` onto its measured ``cpus``; the CPUs it reports."""
        self.wait_ready()
        self._guarded(lambda: self._send({"cmd": "pin"}, "while moving it to its measured CPUs"))
        return self._guarded(lambda: self._expect("pinned", "while moving it to its measured CPUs"))["cpus"]

    def stop(self) -> None:
        """Ask the worker to stop (training ends cleanly) without waiting for it; :meth:`close` waits. Stopping
        both sides first and then closing them lets them finish at the same time."""
        if self.proc is not None and self.exit_code is None and self._cmd is not None and self.proc.poll() is None:
            try:
                self._send({"cmd": "stop"}, "while stopping")
            except WorkerDied:
                pass
            self._close_fd("_cmd")

    def close(self) -> int | None:
        """Ask the worker to stop, wait until its training has ended (its ``stopped`` report, at most ``STOP_GRACE_S``),
        then kill its process group whatever it did: the interpreter's own teardown (about 2 s with torch loaded)
        is of no use here. Idempotent; returns the exit code (None if never started); ``stopped_cleanly`` says
        whether training ended on the command."""
        if self.proc is None:
            return None
        if self.exit_code is None:
            try:
                self.stop()
                if self._rep is not None and self.proc.poll() is None:
                    try:
                        self.stopped_cleanly = self._recv("while stopping", STOP_GRACE_S).get("event") == "stopped"
                    except WorkerDied:
                        pass
            finally:
                self.exit_code = kill_group(self.proc)
                self._close_fd("_cmd")
                self._close_fd("_rep")
                self.req_path.unlink(missing_ok=True)
        return self.exit_code

    def kill(self) -> int | None:
        """Kill the process group at once (no clean stop)."""
        if self.proc is None:
            return None
        if self.exit_code is None:
            self.exit_code = kill_group(self.proc)
            self._close_fd("_cmd")
            self._close_fd("_rep")
            self.req_path.unlink(missing_ok=True)
        return self.exit_code

    def __enter__(self) -> ResidentWorker:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.kill()

    # -- plumbing --
    def _guarded(self, fn):
        try:
            return fn()
        except BaseException:  # a dead worker, a timeout, Ctrl-C, SIGTERM: leave no training behind
            self.kill()
            raise

    def _close_fd(self, attr: str) -> None:
        fd = getattr(self, attr)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
            setattr(self, attr, None)

    def _send(self, obj: dict, when: str) -> None:
        if self._cmd is None:
            raise self._died(when, "its command pipe is closed")
        try:
            os.write(self._cmd, (json.dumps(obj) + "\n").encode())
        except BrokenPipeError:
            raise self._died(when, "it stopped reading commands") from None

    def _expect(self, event: str, when: str) -> dict:
        msg = self._recv(when)
        if msg.get("event") == "error":
            oom = msg.get("status") == "oom"
            raise self._died(when, f"{'out of memory' if oom else 'it failed'}: {msg.get('error')}", with_last=False, oom=oom)
        if msg.get("event") != event:
            raise self._died(when, f"it answered {msg.get('event')!r} where {event!r} was due")
        return msg

    def _recv(self, when: str, timeout_s: float | None = None) -> dict:
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise self._died(when, f"no reply within the {timeout_s:g} s timeout; killed its process group")
            ready, _, _ = select.select([self._rep], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self._rep, 1 << 16)
            if not chunk:
                try:
                    code = self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    code = None
                raise self._died(when, _how(code))
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _died(self, when: str, how: str, with_last: bool = True, oom: bool = False) -> WorkerDied:
        tail = _tail(self.log_path)
        last = f"; log: {_last_line(tail)}" if with_last else ""
        return WorkerDied(f"{self.label} {when}: {how}{last} (full log: {self.log_path})", tail, str(self.log_path), oom=oom)


def _how(code: int | None) -> str:
    if code is None:
        return "it closed its report pipe but did not exit"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        return f"it was killed by {name}"
    return f"it exited with code {code}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
