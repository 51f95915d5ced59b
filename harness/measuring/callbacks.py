"""Measurement inside the worker: Trainer callbacks, module hooks and a small Trainer mixin.

Timing model (transformers 5.x loop): ``get_batch_samples`` -> ``on_step_begin`` -> per micro-batch
``training_step`` (model forward inside ``compute_loss``, then backward) -> ``on_pre_optimizer_step``
-> ``optimizer.step()`` -> ``on_optimizer_step`` -> scheduler, zero_grad -> ``on_step_end``.

* step time: host wall time between consecutive ``on_step_end`` calls (the first from
  ``on_train_begin``), so data loading is inside it;
* ``data``: host time of ``get_batch_samples``;
* ``forward``: outermost model forward (pre-hook to hook), summed over micro-batches;
* ``backward``: end of ``compute_loss`` to end of ``training_step`` (includes checkpoint recompute);
* ``optimizer``: ``on_pre_optimizer_step`` to ``on_optimizer_step``;
* ``other``: the step minus all of the above (loss metrics, clipping, scheduler, logging, NaN check).

On CUDA the device phases are CUDA events, resolved with one synchronize at the end of training;
there is no synchronize per phase. On CPU they are host timestamps.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field

import torch
from transformers import TrainerCallback

from harness.errors import BadInput
from harness.measuring.census import UNCOUNTED_THREADS
from harness.record import PHASES


class HostClock:
    """Marks are ``perf_counter`` seconds; elapsed in ms."""

    def mark(self):
        return time.perf_counter()

    def elapsed_ms(self, a, b) -> float:
        return (b - a) * 1000.0

    def resolve(self) -> None:
        pass


class CudaClock(HostClock):
    """Marks are CUDA events recorded on the current stream; :meth:`resolve` synchronizes once."""

    def mark(self):
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def elapsed_ms(self, a, b) -> float:
        return a.elapsed_time(b)

    def resolve(self) -> None:
        torch.cuda.synchronize()


@dataclass
class _Step:
    data_ms: float = 0.0
    tokens: int = 0
    forward: list = field(default_factory=list)
    backward: list = field(default_factory=list)
    optimizer: list = field(default_factory=list)
    loss: torch.Tensor | None = None


@dataclass(frozen=True)
class Steps:
    """What a recorder measured over its steps, one item a step: the step's time, loss (None before the first
    ``training_step``) and real tokens; ``phases_ms``: each phase's time per step, None with phases off."""

    step_times_ms: list[float]
    losses: list[float | None]
    tokens_per_step: list[int]
    phases_ms: dict[str, list[float]] | None


class Recorder:
    """Collects per-step marks during training and turns them into the record's lists at the end."""

    def __init__(self, clock: HostClock, phases: bool = True, slowdown: float = 0.0, fault: str | None = None):
        self.clock, self.phases, self.slowdown = clock, phases, slowdown
        self.fault_kind, self.fault_step = _parse_fault(fault)
        self.steps: list[_Step] = []
        self.step_times_ms: list[float] = []
        # every token fetched since the start, never drained: the census reads it at its window's edges
        self.token_totals = {"real": 0, "padded": 0}
        self._pending = _Step()
        self._t_prev = None
        self._fwd_start = None
        self._bwd_start = None
        self._opt_start = None

    # -- called by the mixin and hooks --
    def data(self, ms: float, tokens: int, padded: int | None = None) -> None:
        """A step's batches were fetched in ``ms``: ``tokens`` real tokens, ``padded`` tokens with the padding."""
        self._pending.data_ms += ms
        self._pending.tokens += tokens
        self.token_totals["real"] += tokens
        self.token_totals["padded"] += tokens if padded is None else padded

    def forward_pre(self, *_a, **_k):
        if self.phases and torch.is_grad_enabled():
            self._fwd_start = self.clock.mark()

    def forward_post(self, *_a, **_k):
        if self.phases and self._fwd_start is not None:
            self._pending.forward.append((self._fwd_start, self.clock.mark()))
            self._fwd_start = None

    def loss_computed(self) -> None:
        if self.phases:
            self._bwd_start = self.clock.mark()

    def step_done(self, loss: torch.Tensor) -> None:
        if self.phases and self._bwd_start is not None:
            self._pending.backward.append((self._bwd_start, self.clock.mark()))
            self._bwd_start = None
        loss = loss.detach().float()
        self._pending.loss = loss if self._pending.loss is None else self._pending.loss + loss

    # -- callback events --
    def train_begin(self) -> None:
        self._t_prev = time.perf_counter()

    def pre_optimizer(self) -> None:
        if self.phases:
            self._opt_start = self.clock.mark()

    def post_optimizer(self) -> None:
        if self.phases and self._opt_start is not None:
            self._pending.optimizer.append((self._opt_start, self.clock.mark()))

    def step_end(self, step: int) -> None:
        now = time.perf_counter()
        if self.slowdown:
            time.sleep((now - self._t_prev) * self.slowdown)
            now = time.perf_counter()
        self.step_times_ms.append((now - self._t_prev) * 1000.0)
        self._t_prev = now
        self.steps.append(self._pending)
        self._pending = _Step()
        if self.fault_kind and step == self.fault_step:
            _fire(self.fault_kind)

    def resume(self) -> None:
        """Restart the step clock: the next step's time runs from now (a resident worker, after waiting between
        blocks)."""
        self._t_prev = time.perf_counter()

    # -- results --
    def drain(self) -> Steps:
        """:meth:`finish` for the steps recorded since the last drain, which are then forgotten (a resident worker's
        block)."""
        out = self.finish()
        self.steps, self.step_times_ms = [], []
        return out

    def finish(self) -> Steps:
        self.clock.resolve()
        return Steps(
            self.step_times_ms,
            [None if s.loss is None else float(s.loss) for s in self.steps],
            [s.tokens for s in self.steps],
            self._phases_ms() if self.phases else None,
        )

    def _phases_ms(self) -> dict[str, list[float]]:
        """Each phase's time per step; ``other`` is the step's time that the phases before it did not take."""
        rows = []
        for s, step_ms in zip(self.steps, self.step_times_ms):
            timed = {"data": s.data_ms} | {
                name: sum(self.clock.elapsed_ms(a, b) for a, b in getattr(s, name))
                for name in ("forward", "backward", "optimizer")
            }
            rows.append(timed | {"other": step_ms - sum(timed.values())})
        return {p: [row[p] for row in rows] for p in PHASES}


def _parse_fault(text: str | None):
    if not text:
        return None, None
    kind, _, step = text.partition("@")
    if kind not in ("oom", "sigkill", "hang", "crash"):
        raise BadInput(f"HARNESS_FAULT: unknown fault {kind!r}; use oom, sigkill, hang or crash, with @STEP")
    return kind, int(step or 1)


def _fire(kind: str) -> None:
    """Test-only fault injection (HARNESS_FAULT), to prove the runner's failure handling."""
    if kind == "oom":
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (injected by HARNESS_FAULT)")
    if kind == "crash":
        raise RuntimeError("injected crash (HARNESS_FAULT)")
    if kind == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "hang":
        while True:
            time.sleep(1)


class MeasureCallback(TrainerCallback):
    """Forwards the Trainer's step and optimizer events to a :class:`Recorder`, and tracks peak memory."""

    def __init__(self, recorder: Recorder):
        self.rec = recorder

    def on_train_begin(self, args, state, control, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self.rec.train_begin()

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        self.rec.pre_optimizer()

    def on_optimizer_step(self, args, state, control, **kwargs):
        self.rec.post_optimizer()

    def on_step_end(self, args, state, control, **kwargs):
        self.rec.step_end(state.global_step)


def batch_tokens(batch, pad_token_id: int | None = None) -> tuple[int, int]:
    """``(real, padded)`` tokens of one micro-batch. ``padded``: every position of ``input_ids``; ``real``: the
    attention mask's sum, or, without a mask (TRL's padding-free batches), the positions left of each row's right
    padding: the trailing run of ``pad_token_id`` whose ``position_ids`` are 0 (the collator pads them with 0, so an
    end-of-sequence token that doubles as the pad token keeps its position and is counted)."""
    get = getattr(batch, "get", None)
    ids = batch["input_ids"]
    padded = int(ids.numel())
    mask = get("attention_mask") if get else None
    if mask is not None:
        return int(mask.sum()), padded
    if pad_token_id is None:
        return padded, padded
    pad = ids == pad_token_id
    pos = get("position_ids") if get else None
    if pos is not None:
        pad &= pos == 0
    trailing = pad.flip(-1).int().cumprod(-1).sum()  # per row, the pads after the last real token
    return padded - int(trailing), padded


class InstrumentedMixin:
    """Mixed in front of SFTTrainer: times data fetching, marks the loss/backward boundary, keeps per-step loss."""

    recorder: Recorder

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        t0 = time.perf_counter()
        batches, n_items = super().get_batch_samples(epoch_iterator, num_batches, device)
        me = threading.get_ident()
        UNCOUNTED_THREADS.add(me)  # the harness's count of the tokens is not the step's work: no census counts it
        try:
            pad_id = getattr(self.data_collator, "pad_token_id", getattr(self.processing_class, "pad_token_id", None))
            counts = [batch_tokens(b, pad_id) for b in batches]
            real, padded = sum(c[0] for c in counts), sum(c[1] for c in counts)
        finally:
            UNCOUNTED_THREADS.discard(me)
        self.recorder.data((time.perf_counter() - t0) * 1000.0, real, padded)
        return batches, n_items

    def compute_loss(self, *args, **kwargs):
        out = super().compute_loss(*args, **kwargs)
        self.recorder.loss_computed()
        return out

    def training_step(self, *args, **kwargs):
        loss = super().training_step(*args, **kwargs)
        self.recorder.step_done(loss)
        return loss


def attach_forward_hooks(model: torch.nn.Module, recorder: Recorder) -> list:
    """Time the outermost module's forward. Checkpoint recompute runs inner layers only, so it stays in backward."""
    return [model.register_forward_pre_hook(recorder.forward_pre), model.register_forward_hook(recorder.forward_post)]
