"""The GPU watched from the host during a run: an NVML sampler thread (utilisation, SM clock, power, temperature,
clock-event reasons) with its Trainer callback, and the kernel profiler of a dedicated profiling run (kernel time and
launches per step).
"""

from __future__ import annotations

import os
import threading
import time

import torch
from transformers import TrainerCallback


class GpuSampler:
    """Samples NVML utilisation, SM clock, power, temperature and clock-event (throttle) reasons in a thread."""

    def __init__(self, interval_s: float = 0.5):
        self.interval_s = interval_s
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = None
        self._nvml = None
        try:
            import pynvml

            pynvml.nvmlInit()
            idx = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(int(idx) if idx.isdigit() else 0)
            self._nvml = pynvml
        except Exception:
            self._nvml = None

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def sample(self, t0: float = 0.0) -> dict:
        """One reading now (``t_s`` from ``t0`` on the perf_counter clock); raises if NVML fails."""
        n, h = self._nvml, self._handle
        reasons = (
            getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or n.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        util = n.nvmlDeviceGetUtilizationRates(h)
        return {
            "t_s": round(time.perf_counter() - t0, 3),
            "util_pct": util.gpu,
            "mem_util_pct": util.memory,
            "sm_clock_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
            "power_w": n.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "temp_c": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
            "throttle_reasons": int(reasons(h)),
        }

    def _loop(self, t0: float) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.samples.append(self.sample(t0))
            except Exception:  # a failed read is a missing sample, never a failed run
                pass

    def start(self) -> None:
        if self.available:
            self._thread = threading.Thread(target=self._loop, args=(time.perf_counter(),), daemon=True)
            self._thread.start()

    def stop(self) -> list[dict] | None:
        if not self.available:
            return None
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        return self.samples


class SamplerCallback(TrainerCallback):
    def __init__(self, sampler: GpuSampler):
        self.sampler = sampler

    def on_train_begin(self, args, state, control, **kwargs):
        self.sampler.start()

    def on_train_end(self, args, state, control, **kwargs):
        self.sampler.stop()


class KernelProfiler(TrainerCallback):
    """Profiles CUDA kernels over ``n`` steps after ``start`` completed steps: kernel time and launches per step.

    Used only in dedicated runs (``--profile-steps``): the profiler slows the steps it covers.
    """

    def __init__(self, start: int, n: int):
        self.start, self.n = start, n
        self.prof = None
        self.t0 = 0.0
        self.result: dict | None = None

    def on_step_end(self, args, state, control, **kwargs):
        step = state.global_step
        if step == self.start and self.prof is None:
            from torch.profiler import ProfilerActivity, profile

            torch.cuda.synchronize()
            self.prof = profile(activities=[ProfilerActivity.CUDA])
            self.prof.start()
            self.t0 = time.perf_counter()
        elif self.prof is not None and self.result is None and step == self.start + self.n:
            torch.cuda.synchronize()
            wall = (time.perf_counter() - self.t0) * 1000.0
            self.prof.stop()
            kernel_us, launches = 0.0, 0
            for evt in self.prof.key_averages():
                if str(getattr(evt, "device_type", "")).endswith("CUDA"):
                    kernel_us += getattr(evt, "self_device_time_total", None) or getattr(
                        evt, "self_cuda_time_total", 0.0
                    )
                    launches += evt.count
            self.result = {
                "steps": [self.start + 1, self.start + self.n],
                "wall_ms_per_step": wall / self.n,
                "kernel_ms_per_step": kernel_us / 1000.0 / self.n,
                "kernels_per_step": launches / self.n,
                "gpu_busy_fraction": (kernel_us / 1000.0) / wall if wall > 0 else None,
            }
