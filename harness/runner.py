"""The launcher: run one training in a fresh process with a wall-clock timeout and classify the outcome.

The parent never imports torch, so it never initialises CUDA. Every finished run is appended at once
to ``<results-dir>/runs.jsonl`` (one JSON object per line, written with a single ``write`` on an
``O_APPEND`` descriptor and fsynced), so an interrupted session keeps everything it measured.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .spec import Decomposition, Workload
from .worker import EXIT_OK, write_json_atomic

STATUSES = ("ok", "oom", "crash", "timeout", "error")
STDERR_TAIL = 3000


@dataclass(frozen=True)
class RunRequest:
    workload: Workload
    decomposition: Decomposition
    repeat: int  # 1-based repeat of this (workload, decomposition)
    phases: bool = True
    inject_slowdown: float = 0.0
    fault: str | None = None
    profile_steps: int = 0
    python: str | None = None  # the interpreter (environment) to run the worker with; default: this one

    @property
    def case_id(self) -> str:
        return f"{self.workload.name}-{self.decomposition.id}"


def schedule(cases: list[tuple[Workload, Decomposition]], repeats: int, order: str = "interleaved", first_repeat: int = 1):
    """Rounds of all cases: ``A B C A B C`` (interleaved) or ``C B A C B A`` (reversed)."""
    if order not in ("interleaved", "reversed"):
        raise ValueError(f"--order must be 'interleaved' or 'reversed', got {order!r}")
    seq = list(cases) if order == "interleaved" else list(reversed(cases))
    return [(w, d, r) for r in range(first_repeat, first_repeat + repeats) for (w, d) in seq]


def parse_faults(text: str | None) -> dict[tuple[str, int], str]:
    """``HARNESS_FAULTS="1x4#1=sigkill@2;2x2#1=oom@1"`` -> {(decomp, repeat): fault}; test-only fault injection."""
    out = {}
    for part in filter(None, (p.strip() for p in (text or "").split(";"))):
        key, _, fault = part.partition("=")
        dec, _, rep = key.partition("#")
        out[(dec, int(rep or 1))] = fault
    return out


def append_jsonl(path: Path, record: dict) -> None:
    """Append one line atomically: a single write on an O_APPEND descriptor, then fsync."""
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> list[dict]:
    """Records of a runs.jsonl; a torn last line (a killed writer) is skipped, not fatal."""
    out = []
    if not Path(path).exists():
        return out
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                print(f"warning: {path}:{n} is not valid JSON; skipped", file=sys.stderr)
    return out


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-STDERR_TAIL:]
    except OSError:
        return ""
    return data.decode(errors="replace")


def run_one(req: RunRequest, results_dir: Path, session_id: str, timeout_s: float, gpu: str) -> dict:
    """Run one training in a fresh process; return its record (already appended to runs.jsonl)."""
    results_dir = Path(results_dir)
    work = results_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    req_path, res_path, log_path = work / f"{run_id}.request.json", work / f"{run_id}.result.json", work / f"{run_id}.log"
    write_json_atomic(str(req_path), {"workload": req.workload.to_dict(), "decomposition": req.decomposition.id,
                                      "phases": req.phases, "inject_slowdown": req.inject_slowdown, "fault": req.fault,
                                      "profile_steps": req.profile_steps,
                                      "force_cpu": gpu == "cpu", "launched_at": time.time()})
    env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false", HF_HUB_DISABLE_PROGRESS_BARS="1")
    env.pop("HARNESS_FAULT", None)
    if gpu == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    # The worker runs from this source tree, whether or not harness is installed.
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    started = time.time()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([req.python or sys.executable, "-m", "harness.worker", str(req_path), str(res_path)],
                                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
            timed_out = True
    wall = time.time() - started
    record = {"run_id": run_id, "session_id": session_id, "workload": req.workload.name, "workload_hash": req.workload.hash,
              "workload_spec": req.workload.to_dict(),
              "decomposition": req.decomposition.as_dict(), "decomposition_id": req.decomposition.id, "repeat": req.repeat,
              "gpu": gpu, "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)), "wall_s": wall,
              "phases_enabled": req.phases, "inject_slowdown": req.inject_slowdown, "profile_steps": req.profile_steps,
              "exit_code": code}
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
    elif code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        record.update(status="crash", signal=name, error=f"worker killed by {name}")
    else:
        record.update(status="crash", error=f"worker exited with code {code} and wrote no result")
    if record["status"] != "ok":
        record["stderr_tail"] = _tail(log_path)
    if record["status"] == "ok" and code != EXIT_OK:  # defensive: a result that says ok from a failed process
        record.update(status="crash", error=f"worker exited with code {code}")
    record["log"] = str(log_path)
    append_jsonl(results_dir / "runs.jsonl", record)
    for p in (req_path, res_path):
        p.unlink(missing_ok=True)
    return record
