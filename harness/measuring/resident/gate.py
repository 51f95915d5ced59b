"""The gate of a resident worker: the measuring callback that holds the Trainer between blocks and runs it a block of
k steps (or micro-batches) at a time on the parent's command, reporting each block (:mod:`harness.measuring.resident`).

Imports torch: only the worker process imports this module, once its trainer's build has imported torch.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import torch

from harness.errors import BadInput
from harness.measuring.callbacks import CudaClock, MeasureCallback, Steps
from harness.measuring.gpu_monitors import GpuSampler
from harness.measuring.resident.channel import Channel, canary, host_cpu_times, pin
from harness.measuring.resident.messages import BlockReport, Pin, Pinned, Ready, RunBlock, Stop


class BlockGate(MeasureCallback):
    """MeasureCallback that runs the Trainer in blocks of k steps on the parent's command (the protocol is described in
    :mod:`harness.measuring.resident`)."""

    def __init__(self, recorder, channel: Channel, home_cpus: list[int] | None = None):
        super().__init__(recorder)
        self.chan = channel
        self.home_cpus = home_cpus  # where the "pin" command moves a worker that warmed up apart
        self.cuda = isinstance(recorder.clock, CudaClock)
        self.nvml = GpuSampler() if self.cuda else None  # one reading at each block's end, no thread
        self.info = Ready()  # sent as "ready", with the environment; filled in once the trainer is built (child._train)
        self.left = 0  # steps (micro-batches, with ``micro``) left in the current block
        self.micro = False  # the current block counts micro-batches (on_substep_end and on_step_end), not steps
        self.blocks = 0
        self.inject = None  # the InjectWork of this worker, when it has one (set after the build)
        self._k = self._canary = self._t0 = self._cpu0 = self._wall0 = self._host0 = self._inject0 = None

    def on_train_begin(self, args, state, control, **kwargs):
        super().on_train_begin(args, state, control, **kwargs)
        from harness.measuring.env import worker_env

        self.chan.send(replace(self.info, env=worker_env(kwargs.get("model"))))
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
            losses = self.rec.drain().losses if step_end else []
            got = Steps(step_times_ms=[wall * 1000.0], losses=losses, tokens_per_step=[], phases_ms=None)
        else:
            got = self.rec.drain()
        self.blocks += 1
        self.chan.send(
            BlockReport(
                k=self._k,
                gpu=self._gpu(),
                step_times_ms=got.step_times_ms,
                canary_ms=self._canary,
                wall_s=wall,
                cpu_s=cpu,
                started_at=self._wall0,
                global_step=state.global_step,
                other_cpus=other,
                steal_cpus=steal,
                phases_ms=got.phases_ms,
                losses=got.losses,
                inject_ms=(self.inject.spent_s - self._inject0) * 1000.0 / self._k if self.inject is not None else None,
            )
        )

    def _gpu(self) -> dict | None:
        """The GPU as the block ends, just after its last step synchronized: SM clock, power, temperature, utilisation,
        clock-event reasons (NVML; None without it). Read after the block's clocks stopped, so it costs the block
        nothing."""
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
        while isinstance(msg, Pin):  # home to the measured CPUs after a warm-up apart
            if self.home_cpus:
                pin(self.home_cpus)
            self.chan.send(Pinned(sorted(os.sched_getaffinity(0))))
            msg = self.chan.recv()
        if msg is None or isinstance(msg, Stop):
            control.should_training_stop = True
            return
        if not isinstance(msg, RunBlock):
            raise BadInput(
                f"resident worker: unknown command {msg.to_json()!r}; expected block with k >= 1, pin, or stop"
            )
        if msg.inject is not None:  # the amount of injected work for this block (calibrated by the parent)
            if self.inject is None:
                raise BadInput(
                    "resident worker: a block asks for injected work, but this worker was started without it"
                )
            self.inject.n, self.inject.keep = msg.inject, True
        self._k = self.left = msg.k
        was_micro, self.micro = self.micro, msg.micro
        if not was_micro:  # in micro grain the recorder's step spans several units: drained at its end only
            self.rec.drain()  # nothing from outside a block leaks into it
        self._canary = canary()
        self._wall0, self._cpu0, self._host0 = time.time(), time.process_time(), host_cpu_times()
        self._inject0 = self.inject.spent_s if self.inject is not None else None
        self._t0 = time.perf_counter()
        self.rec.resume()
