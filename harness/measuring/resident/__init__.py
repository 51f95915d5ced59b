"""Resident workers: one process per side builds its trainer once, then trains in blocks of k optimizer steps on
command.

``python -m harness.measuring.resident REQUEST.json CMD_FD REPORT_FD`` is the worker (:mod:`.child`, with its
gate in :mod:`.gate`); the parent drives it through a :class:`ResidentWorker`, defined here. The two talk over two
dedicated pipes, one JSON object per line (commands in on CMD_FD, reports out on REPORT_FD), never over stdout or
stderr, where libraries print: those go to the worker's log file. Each kind of line is a frozen dataclass of
:mod:`.messages` (:class:`~.messages.RunBlock`, :class:`~.messages.BlockReport`, ...) that both ends build and read.

The worker builds exactly what a fresh run builds (:func:`harness.measuring.worker.build_trainer`, the
same request keys: workload, decomposition, phases, inject_slowdown, inject_work, fault, force_cpu) with
``max_steps`` unbounded, so the Trainer cycles the dataset for as long as the parent asks. Its measuring
callback is a :class:`~harness.measuring.resident.gate.BlockGate`, which also gates the loop:

* at ``on_train_begin`` it reports ``ready`` (set-up times, host probe, environment) and waits;
* a command ``{"cmd": "block", "k": K}`` times a fixed host canary loop, restarts the step clock and lets the Trainer
  run K optimizer steps;
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

Both sides run glibc malloc with fixed thresholds (:data:`.launch.STABLE_MALLOC`; ``malloc_default`` turns it
off): with glibc's moving thresholds each process settles into its own rate of page faults, so that two
processes of one build can differ in step time by more than the effects to be found.

**Pre-start** (``hold_cpus``): most of a worker's start-up is importing torch, transformers, trl and peft. A
pre-started worker does that on ``hold_cpus`` (CPUs the measured workers do not use) while the previous launch runs,
reports ``held`` and waits; on :meth:`ResidentWorker.release` (``{"cmd": "go"}``) it moves all its threads to its own
``cpus`` and builds its trainer, the only part of the start-up left in the launch. Each launch is still a fresh
process of its own.

**Warm apart** (``warm_cpus``): a worker given CPUs of its own for its start builds its trainer and runs its warm-up
blocks there, so that the two sides of a launch do both at once instead of in turn on the one measured CPU; then
``{"cmd": "pin"}`` (:meth:`ResidentWorker.pin_home`), answered by ``{"event": "pinned", "cpus": [...]}``, moves all its
threads to ``cpus`` before its first measured block. Warm-up blocks are never judged, so where they ran does not matter.

The parent never imports torch. A worker runs in its own process group, killed on :meth:`ResidentWorker.close`,
on any exception (Ctrl-C, and SIGTERM under :func:`harness.measuring.runner.sigterm_as_interrupt`) and on
a timeout, exactly as :func:`harness.measuring.runner.run_one` does; a worker whose parent dies without
cleaning up (SIGKILL) is killed with it (:mod:`harness.measuring.lifeline`), and where that line cannot be set it sees
the end of its command pipe and stops by itself after its current block.
A worker that dies raises :class:`WorkerDied`, one line with the last line of its log.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import TypeVar

from harness.errors import BadInput
from harness.files import make_dir, new_id, write_json_atomic
from harness.measuring.resident.launch import STABLE_MALLOC, spawn
from harness.measuring.resident.messages import (
    BlockReport,
    Command,
    Failed,
    Go,
    Held,
    Pin,
    Pinned,
    Ready,
    Report,
    RunBlock,
    Stop,
    Stopped,
    event_of,
    read_report,
)
from harness.measuring.runner import RUN_TIMEOUT_S, kill_group, log_tail, worker_environ
from harness.spec import Decomposition, Workload

R = TypeVar("R", Held, Ready, BlockReport, Pinned)  # the report a step of the protocol waits for

STOP_GRACE_S = 60.0  # how long close() waits for a clean stop before it kills the group


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
    """The parent's handle on one resident worker: ``start()``, ``block(k) -> BlockReport``, ``close()``; a context
    manager.

    ``block(k)`` returns the worker's report (:class:`~harness.measuring.resident.messages.BlockReport`: step times,
    canary, wall and CPU time, phases, losses, ...); ``wait_ready()`` its :class:`~.messages.Ready`, and
    ``startup_wall_s`` and ``prestarted`` say how its start went. Every failure kills the worker's process
    group and raises :class:`WorkerDied` (its ``str`` is one line); Ctrl-C and SIGTERM kill it too.
    """

    def __init__(
        self,
        name: str,
        workload: Workload,
        decomposition: Decomposition,
        work_dir: str | Path,
        *,
        gpu: str,
        launch: int = 1,
        python: str | None = None,
        phases: bool = True,
        inject_slowdown: float = 0.0,
        inject_work: int = 0,
        fault: str | None = None,
        cpus: list[int] | None = None,
        malloc_default: bool = False,
        timeout_s: float = RUN_TIMEOUT_S,
        hold_cpus: list[int] | None = None,
        inject_kind: str = "casts",
        warm_cpus: list[int] | None = None,
    ):
        self.name, self.workload, self.decomposition, self.gpu, self.launch = name, workload, decomposition, gpu, launch
        self.python, self.phases, self.inject_slowdown, self.inject_work, self.fault = (
            python,
            phases,
            inject_slowdown,
            inject_work,
            fault,
        )
        self.timeout_s, self.cpus, self.malloc_default = timeout_s, list(cpus) if cpus else None, malloc_default
        self.hold_cpus = list(hold_cpus) if hold_cpus else None  # pre-start: import there, build on release()
        self.inject_kind = inject_kind  # casts, or host work (InjectWork kind)
        # build and warm up there; pin_home() then moves it to cpus
        self.warm_cpus = list(warm_cpus) if warm_cpus else None
        self.released_at: float | None = None
        self.held: Held | None = None
        self.work_dir = Path(work_dir)
        self.id = new_id(f"{name.lower()}{launch}")
        self.log_path = self.work_dir / f"{self.id}.log"
        self.req_path = self.work_dir / f"{self.id}.request.json"
        self.proc: subprocess.Popen | None = None
        self.ready: Ready | None = None
        self.startup_wall_s: float | None = None  # from the launch (or the release) to "ready"
        self.prestarted: dict | None = None  # a pre-started worker: its preload_s and held_wall_s
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
        make_dir(self.work_dir)
        write_json_atomic(
            self.req_path,
            {
                "workload": self.workload.for_worker(),
                "decomposition": self.decomposition.id,
                "phases": self.phases,
                "inject_slowdown": self.inject_slowdown,
                "inject_work": self.inject_work,
                "fault": self.fault,
                "inject_kind": self.inject_kind,
                "force_cpu": self.gpu == "cpu",
                "cpus": self.cpus,
                "launched_at": time.time(),
            }
            | ({"hold": True, "hold_cpus": self.hold_cpus} if self.hold_cpus else {})
            | ({"warm_cpus": self.warm_cpus} if self.warm_cpus else {}),
        )
        self.started_at = time.time()
        self.proc, self._cmd, self._rep = spawn(
            self.python, self.req_path, self.log_path, self.environ(), self.hold_cpus
        )
        if wait:
            self.wait_ready()
        return self

    def environ(self) -> dict[str, str]:
        """The worker's environment: a fresh worker's (:func:`harness.measuring.runner.worker_environ`) plus
        :data:`.launch.STABLE_MALLOC` unless ``malloc_default``."""
        env = worker_environ(self.gpu)
        if not self.malloc_default:
            env.update(STABLE_MALLOC)
        # OpenMP sizes its pool from the CPUs it sees when torch loads: the hold CPUs of a pre-started worker. Many
        # threads on one CPU make a trainer's set-up many times slower
        if (self.hold_cpus or self.warm_cpus) and self.cpus:
            for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                env.setdefault(var, str(len(self.cpus)))
        return env

    def release(self) -> None:
        """A pre-started worker (``hold_cpus``): wait until it has imported, then let it build its trainer on its own
        CPUs; :meth:`wait_ready` then waits for the build only."""
        if self.hold_cpus and self.released_at is None:
            self.held = self._guarded(lambda: self._expect(Held, "while pre-starting"))
            self._guarded(lambda: self._send(Go(), "while releasing it"))
            self.released_at = time.time()

    def wait_ready(self) -> Ready:
        """Wait until the worker has built its trainer; its ``ready`` report (set-up times, probe, env).
        ``startup_wall_s`` counts from :meth:`release` for a pre-started worker."""
        if self.ready is None:
            self.release()
            self.ready = self._guarded(lambda: self._expect(Ready, "while starting"))
            self.startup_wall_s = time.time() - (self.released_at or self.started_at)
            if self.held is not None:
                self.prestarted = {
                    "preload_s": self.held.preload_s,
                    "held_wall_s": self.released_at - self.started_at,
                }
        return self.ready

    def block(self, k: int, inject: float | None = None, micro: bool = False) -> BlockReport:
        """Run ``k`` optimizer steps now (with ``inject`` casts of injected work per LoRA forward, when given); the
        block's report. With ``micro``, ``k`` micro-batches of gradient accumulation instead (the last one of a step
        includes its optimizer step); the report's ``step_times_ms`` is then the one synchronized wall time of those
        micro-batches."""
        self.send_block(k, inject, micro)
        return self.recv_block()

    def send_block(self, k: int, inject: float | None = None, micro: bool = False) -> None:
        """Start a block (:meth:`block`) without waiting for it: two workers warming up apart run theirs at once."""
        if k < 1:
            raise BadInput(f"block needs k >= 1, got {k}")
        self.wait_ready()
        cmd = RunBlock(int(k), None if inject is None else float(inject), micro)
        self._guarded(lambda: self._send(cmd, f"before block {self.blocks + 1}"))

    def recv_block(self) -> BlockReport:
        """The report of the block started by :meth:`send_block`."""
        rep = self._guarded(lambda: self._expect(BlockReport, f"during block {self.blocks + 1}"))
        self.blocks += 1
        return rep

    def pin_home(self) -> list[int]:
        """Move a worker that built and warmed up on ``warm_cpus`` onto its measured ``cpus``; the CPUs it reports."""
        self.wait_ready()
        self._guarded(lambda: self._send(Pin(), "while moving it to its measured CPUs"))
        return self._guarded(lambda: self._expect(Pinned, "while moving it to its measured CPUs")).cpus

    def stop(self) -> None:
        """Ask the worker to stop (training ends cleanly) without waiting for it; :meth:`close` waits. Stopping
        both sides first and then closing them lets them finish at the same time."""
        if self.proc is not None and self.exit_code is None and self._cmd is not None and self.proc.poll() is None:
            try:
                self._send(Stop(), "while stopping")
            except WorkerDied:
                pass
            self._close_fd("_cmd")

    def close(self) -> int | None:
        """Ask the worker to stop, wait until its training has ended (its ``stopped`` report, at most ``STOP_GRACE_S``),
        then kill its process group whatever it did: the interpreter's own teardown (slow with torch loaded)
        is of no use here. Idempotent; returns the exit code (None if never started); ``stopped_cleanly`` says
        whether training ended on the command."""
        if self.proc is None:
            return None
        if self.exit_code is None:
            try:
                self.stop()
                if self._rep is not None and self.proc.poll() is None:
                    try:
                        self.stopped_cleanly = isinstance(self._recv("while stopping", STOP_GRACE_S), Stopped)
                    except WorkerDied:
                        pass
            finally:
                self.exit_code = kill_group(self.proc)
                self._close_fd("_cmd")
                self._close_fd("_rep")
                self._forget_request()
        return self.exit_code

    def kill(self) -> int | None:
        """Kill the process group at once (no clean stop)."""
        if self.proc is None:
            return None
        if self.exit_code is None:
            self.exit_code = kill_group(self.proc)
            self._close_fd("_cmd")
            self._close_fd("_rep")
            self._forget_request()
        return self.exit_code

    def _forget_request(self) -> None:
        """Remove the request file; a results dir that turned read-only keeps it, and the kill still counts."""
        try:
            self.req_path.unlink(missing_ok=True)
        except OSError:
            pass

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

    def _send(self, cmd: Command, when: str) -> None:
        if self._cmd is None:
            raise self._died(when, "its command pipe is closed")
        try:
            os.write(self._cmd, (json.dumps(cmd.to_json()) + "\n").encode())
        except BrokenPipeError:
            raise self._died(when, "it stopped reading commands") from None

    def _expect(self, kind: type[R], when: str) -> R:
        msg = self._recv(when)
        if isinstance(msg, Failed):
            oom = msg.status == "oom"
            raise self._died(when, f"{'out of memory' if oom else 'it failed'}: {msg.error}", with_last=False, oom=oom)
        if not isinstance(msg, kind):
            raise self._died(when, f"it answered {event_of(msg)!r} where {kind.event!r} was due")
        return msg

    def _recv(self, when: str, timeout_s: float | None = None) -> Report:
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
        return read_report(json.loads(line))

    def _died(self, when: str, how: str, with_last: bool = True, oom: bool = False) -> WorkerDied:
        tail = log_tail(self.log_path)
        last = f"; log: {_last_line(tail)}" if with_last else ""
        return WorkerDied(
            f"{self.label} {when}: {how}{last} (full log: {self.log_path})", tail, str(self.log_path), oom=oom
        )


def _how(code: int | None) -> str:
    if code is None:
        return "it closed its report pipe but did not exit"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        return f"it was killed by {name}"
    return f"it exited with code {code}"
