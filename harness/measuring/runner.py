"""The launcher: run one training in a fresh process with a wall-clock timeout and classify the outcome.

The parent never imports torch, so it never initialises CUDA. Every finished run is appended at once
to ``<results-dir>/runs.jsonl`` (:func:`harness.files.append_jsonl`), so an interrupted session keeps
everything it measured. The worker runs in its own process group; a timeout, Ctrl-C (SIGINT) or a
SIGTERM to the parent kills that whole group before the parent goes on or exits, so no training is
left on the device to overlap the next job's timed runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.files import append_jsonl, new_id, write_json_atomic
from harness.measuring.worker import EXIT_OK
from harness.spec import Decomposition, Workload

STDERR_TAIL = 3000


@dataclass(frozen=True)
class RunRequest:
    workload: Workload
    decomposition: Decomposition
    repeat: int  # 1-based repeat of this (workload, decomposition)
    phases: bool = True
    inject_slowdown: float = 0.0
    inject_work: int = 0  # test-only: extra casts per LoRA layer forward (harness.measuring.census)
    fault: str | None = None
    profile_steps: int = 0
    census: bool = False  # a census run: count the work of the steps under the profiler (never a timed run)
    python: str | None = None  # the interpreter (environment) to run the worker with; default: this one

    @property
    def case_id(self) -> str:
        return f"{self.workload.name}-{self.decomposition.id}"


def parse_faults(text: str | None) -> dict[tuple[str, int], str]:
    """``HARNESS_FAULTS="1x4#1=sigkill@2;2x2#1=oom@1"`` -> {(decomp, repeat): fault}; test-only fault injection."""
    out = {}
    for part in filter(None, (p.strip() for p in (text or "").split(";"))):
        key, _, fault = part.partition("=")
        dec, _, rep = key.partition("#")
        out[(dec, int(rep or 1))] = fault
    return out


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-STDERR_TAIL:]
    except OSError:
        return ""
    return data.decode(errors="replace")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that the same cleanup runs."""


@contextmanager
def sigterm_as_interrupt():
    """While a worker runs, make SIGTERM raise :class:`Terminated` (main thread only; elsewhere a no-op)."""
    def handler(signum, frame):
        raise Terminated(f"received {signal.Signals(signum).name}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def kill_group(proc: subprocess.Popen) -> int:
    """SIGKILL the worker's whole process group and reap it; returns its exit code."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.wait()


def worker_environ(gpu: str) -> dict[str, str]:
    """The environment of a worker process (fresh or resident): unbuffered, quiet, no GPU for ``--gpu cpu``,
    and this source tree first on PYTHONPATH, whether or not harness is installed."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false", HF_HUB_DISABLE_PROGRESS_BARS="1")
    env.pop("HARNESS_FAULTS", None)  # the parent parsed them; the request carries this run's fault
    if gpu == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def run_one(req: RunRequest, results_dir: Path, session_id: str, timeout_s: float, gpu: str) -> dict:
    """Run one training in a fresh process; return its record (already appended to runs.jsonl).

    On KeyboardInterrupt (SIGINT) or SIGTERM the worker's process group is killed, nothing is recorded
    for the unfinished run, and the interrupt propagates; the runs finished before it stay in runs.jsonl.
    """
    results_dir = Path(results_dir)
    work = results_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    run_id = new_id()
    req_path, res_path, log_path = work / f"{run_id}.request.json", work / f"{run_id}.result.json", work / f"{run_id}.log"
    write_json_atomic(req_path, {"workload": req.workload.to_dict(), "decomposition": req.decomposition.id,
                                 "phases": req.phases, "inject_slowdown": req.inject_slowdown, "inject_work": req.inject_work,
                                 "fault": req.fault, "profile_steps": req.profile_steps, "census": req.census,
                                 "force_cpu": gpu == "cpu", "launched_at": time.time()})
    env = worker_environ(gpu)
    started = time.time()
    with open(log_path, "wb") as log, sigterm_as_interrupt():
        proc = subprocess.Popen([req.python or sys.executable, "-m", "harness.measuring.worker", str(req_path), str(res_path)],
                                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            code = kill_group(proc)
            timed_out = True
        except BaseException:  # Ctrl-C, SIGTERM, anything: leave no training behind
            kill_group(proc)
            for p in (req_path, res_path):
                p.unlink(missing_ok=True)
            raise
    wall = time.time() - started
    record = {"run_id": run_id, "session_id": session_id, "workload": req.workload.name, "workload_hash": req.workload.hash,
              "workload_spec": req.workload.to_dict(),
              "decomposition": req.decomposition.as_dict(), "decomposition_id": req.decomposition.id, "repeat": req.repeat,
              "gpu": gpu, "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)), "wall_s": wall,
              "phases_enabled": req.phases, "inject_slowdown": req.inject_slowdown, "inject_work": req.inject_work,
              "profile_steps": req.profile_steps, "exit_code": code}
    result = {}
    if res_path.exists() and not timed_out:
        try:
            result = json.loads(res_path.read_text())
        except (OSError, json.JSONDecodeError):
            result = {}
    if timed_out:
        record.update(status="timeout", error=f"no result after the {timeout_s:g} s timeout; killed the process group")
    elif result:
        record.update(result)
        if record["status"] == "ok" and code != EXIT_OK:  # a result that says ok from a process that then failed
            record.update(status="crash", error=f"worker wrote an ok result but exited with code {code}")
    elif code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        record.update(status="crash", signal=name, error=f"worker killed by {name}")
    else:
        record.update(status="crash", error=f"worker exited with code {code} and wrote no result")
    if record["status"] != "ok":
        record["stderr_tail"] = _tail(log_path)
    record["log"] = str(log_path)
    append_jsonl(results_dir / "runs.jsonl", record)
    for p in (req_path, res_path):
        p.unlink(missing_ok=True)
    return record
