"""The resident worker process (``python -m harness.measuring.resident REQUEST.json CMD_FD REPORT_FD``): its side of
the pipes, its CPUs, and :func:`main`, which builds the trainer and trains in blocks on the parent's command
(the protocol is described in :mod:`harness.measuring.resident`).

This module does not import torch at its top: the worker's imports are timed as part of its start-up (``import_s``),
and a pre-started worker makes them on its hold CPUs. :mod:`harness.measuring.resident.gate`, which does, is imported
once the trainer's build has imported torch.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from typing import TYPE_CHECKING

from harness.errors import BadInput
from harness.measuring.resident.channel import Channel, pin
from harness.measuring.resident.launch import STABLE_MALLOC
from harness.measuring.resident.messages import Failed, Go, Held, Ready, Stop, Stopped
from harness.spec_sections import MAX_STEPS

if TYPE_CHECKING:
    from harness.measuring.worker import Timing, WorkerRequest

UNBOUNDED_STEPS = MAX_STEPS  # max_steps of a resident trainer: it stops on command, never by itself


def _torch_threads() -> int | None:
    """torch's intra-op threads in this process (a pre-started worker must match a fresh one: one per pinned CPU)."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None


def _hold(req: WorkerRequest, chan: Channel, timing: Timing, t_main: float) -> float | None:
    """A pre-started worker: import on the hold CPUs while the previous launch runs, report ``held`` and wait for "go".
    The time its build starts from (the "go"); None when it is to exit without building (stop, or the parent gone).
    A broken pipe (the parent gone while it reported) is the caller's to handle."""
    from harness.measuring.worker import preload

    if req.hold_cpus:
        pin(req.hold_cpus)
    timing.preload_s = loaded = preload()
    chan.send(Held(loaded))
    msg = chan.recv()
    if msg is None or isinstance(msg, Stop):  # the parent is gone, or needs no further launch
        return None
    if not isinstance(msg, Go):
        raise BadInput(f"resident worker: unknown command {msg.to_json()!r} while held; expected go or stop")
    timing.held_s = time.time() - t_main - loaded
    return time.time()


def _train(req: WorkerRequest, chan: Channel, timing: Timing, t_main: float) -> int:
    """Build the trainer with a :class:`~harness.measuring.resident.gate.BlockGate` as its measuring callback and train
    until the parent stops it; report ``stopped``."""
    from harness.measuring.worker import build_trainer

    gates = []

    def gate(recorder):
        from harness.measuring.resident.gate import BlockGate

        gates.append(BlockGate(recorder, chan, req.cpus))
        return gates[0]

    with tempfile.TemporaryDirectory(prefix="harness-resident-") as outdir:
        built = build_trainer(req, timing, outdir, measure=gate, max_steps=UNBOUNDED_STEPS, sampler=False)
        gates[0].inject = built.inject
        gates[0].info = Ready(
            timing_s=timing.to_json(),
            host_probe=built.probe,
            cuda=built.cuda,
            cpus=sorted(os.sched_getaffinity(0)),
            torch_threads=_torch_threads(),
            malloc={k: os.environ.get(k) for k in STABLE_MALLOC},
            inject_work_layers=built.inject.layers if built.inject is not None else None,
            inject_kind=built.inject.kind if built.inject is not None else None,
        )
        built.trainer.train()
    chan.send(Stopped(gates[0].blocks, time.time() - t_main))
    return 0


def main(argv: list[str]) -> int:
    from harness.measuring.worker import EXIT_ERROR, EXIT_OOM, Timing, WorkerRequest, classify

    t_main = time.time()
    request_path, cmd_fd, rep_fd = argv
    with open(request_path) as fh:
        req = WorkerRequest.from_json(json.load(fh))
    chan = Channel(int(cmd_fd), int(rep_fd))
    timing = Timing(startup_s=t_main - req.launched_at if req.launched_at else None)
    if req.hold:  # pre-started: import on other CPUs while the previous launch runs, then wait for "go"
        try:
            t_main = _hold(req, chan, timing, t_main)
        except BrokenPipeError:
            return EXIT_ERROR
        if t_main is None:
            return 0
    if req.warm_cpus:  # warm apart: build and warm up on CPUs of its own, beside the other side; "pin" moves it home
        pin(req.warm_cpus)
    elif req.cpus:  # pinned: both sides on the same CPU(s), so that neither gets a faster or a quieter core
        pin(req.cpus)
    try:
        return _train(req, chan, timing, t_main)
    except BrokenPipeError:  # the parent is gone: nobody to tell
        return EXIT_ERROR
    except Exception as exc:
        status, message = classify(exc)
        print(traceback.format_exc(), file=sys.stderr)
        print(("does not fit: " if status == "oom" else "error: ") + message, file=sys.stderr)
        try:
            chan.send(Failed(status, message))
        except OSError:
            pass
        return EXIT_OOM if status == "oom" else EXIT_ERROR
