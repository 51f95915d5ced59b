"""The launcher: run one training in a fresh process with a wall-clock timeout and classify the outcome.

The parent never imports torch, so it never initialises CUDA. Every finished run is appended at once
to ``<results-dir>/runs.jsonl`` (:func:`harness.files.append_jsonl`), so an interrupted session keeps
everything it measured. The worker runs in its own process group; a timeout, Ctrl-C (SIGINT) or a
SIGTERM to the parent kills that whole group before the parent goes on or exits, and a parent killed
without its cleanup (SIGKILL) takes the worker with it (:mod:`harness.measuring.lifeline`), so no training
is left on the device to overlap the next job's timed runs.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from harness import knobs
from harness.exits import Terminated
from harness.files import append_jsonl, make_dir, new_id, refuse_link, write_json_atomic
from harness.measuring import lifeline
from harness.measuring.worker import EXIT_OK, Timing
from harness.results import formats
from harness.results.run import Run
from harness.spec import Decomposition, Workload

STDERR_TAIL = 3000

# the wall-clock limit of one run (seconds) when nobody says another: it is stopped and recorded as timed out
RUN_TIMEOUT_S = 1800.0


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
    timed_steps: int = (
        0  # a probe: time this many steps after the warm-up, then (with census) count the work of the next ones
    )
    series: tuple[RunRequest, ...] = ()  # several short runs in one process (the advisor's probes): one record each

    def as_item(self) -> dict:
        return {
            "workload": self.workload.for_worker(),
            "decomposition": self.decomposition.id,
            "phases": self.phases,
            "inject_slowdown": self.inject_slowdown,
            "inject_work": self.inject_work,
            "fault": self.fault,
            "profile_steps": self.profile_steps,
            "census": self.census,
            "timed_steps": self.timed_steps,
        }


def parse_faults(text: str | None) -> dict[tuple[str, int], str]:
    """``HARNESS_FAULTS="1x4#1=sigkill@2;2x2#1=oom@1"`` -> {(decomp, repeat): fault}; test-only fault injection."""
    out = {}
    for part in filter(None, (p.strip() for p in (text or "").split(";"))):
        key, _, fault = part.partition("=")
        dec, _, rep = key.partition("#")
        out[(dec, int(rep or 1))] = fault
    return out


def log_tail(path: Path, n: int = STDERR_TAIL) -> str:
    """The last ``n`` bytes of a log file as text (undecodable bytes replaced); "" when it cannot be read."""
    try:
        data = path.read_bytes()[-n:]
    except OSError:
        return ""
    return data.decode(errors="replace")


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
    env.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off on shared multi-GPU hosts
    env.pop(knobs.FAULTS.name, None)  # the parent parsed them; the request carries this run's fault
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
    refuse_link(
        results_dir / "runs.jsonl"
    )  # before the run, not after it: results are written inside the results dir only
    work = make_dir(results_dir / "work")
    run_id = new_id()
    req_path, res_path, log_path = (
        work / f"{run_id}.request.json",
        work / f"{run_id}.result.json",
        work / f"{run_id}.log",
    )
    write_json_atomic(
        req_path,
        req.as_item()
        | {"force_cpu": gpu == "cpu", "launched_at": time.time()}
        | ({"series": [r.as_item() for r in req.series]} if req.series else {}),
    )
    env = worker_environ(gpu)
    started = time.time()
    with open(log_path, "wb") as log, sigterm_as_interrupt():
        proc = subprocess.Popen(
            worker_command(req, req_path, res_path),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=lifeline.preexec(),
        )
        try:
            code = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            code = kill_group(proc)
            timed_out = True
        except BaseException:  # Ctrl-C, SIGTERM, anything: leave no training behind
            kill_group(proc)
            for p in (req_path, res_path):
                with suppress(OSError):  # a read-only results dir: the interrupt, not this, is what the caller hears
                    p.unlink(missing_ok=True)
            raise
    wall = time.time() - started
    world = req.decomposition.world_size
    result = None if timed_out else (_read_result(res_path) if world == 1 else merge_ranks(res_path, world, log_path))
    if timed_out:
        result = Run(status="timeout", error=f"no result after the {timeout_s:g} s timeout; killed the process group")
    elif result is not None:
        if result.ok and code != EXIT_OK:  # a result that says ok from a process that then failed
            result = replace(result, status="crash", error=f"worker wrote an ok result but exited with code {code}")
    elif code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        result = Run(status="crash", signal=name, error=f"worker killed by {name}")
    else:
        result = Run(status="crash", error=f"worker exited with code {code} and wrote no result")
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started))
    record = _headed(result, req, run_id, session_id, gpu, started_at, wall, code)
    if not record.ok:
        record = replace(record, stderr_tail=log_tail(log_path))
    record = replace(record, log=str(log_path))
    if req.series:
        done = record.detail("series") or []
        record = replace(record, details={k: v for k, v in record.details.items() if k != "series"})
        items = _series_records(req, record, [Run.from_json(r) for r in done])
        for r in items:
            append_jsonl(results_dir / "runs.jsonl", r.to_json())
        written = record.to_json() | {"series": [r.to_json() for r in items]}
    else:
        written = record.to_json()
        append_jsonl(results_dir / "runs.jsonl", written)
    for p in (req_path, res_path, *(Path(f"{res_path}.rank{r}") for r in range(world))):
        p.unlink(missing_ok=True)
    return written


def _headed(
    result: Run,
    req: RunRequest,
    run_id: str,
    session_id: str | None,
    gpu: str,
    started_at: str | None,
    wall: float,
    code: int | None,
) -> Run:
    """``result`` under the header of its run: who ran what, when, for how long, with which switches."""
    return replace(
        result,
        run_id=run_id,
        session_id=session_id,
        workload=req.workload.name,
        workload_hash=req.workload.hash,
        workload_spec=req.workload.to_dict(),
        decomposition=req.decomposition.as_dict(),
        decomposition_id=req.decomposition.id,
        repeat=req.repeat,
        gpu=gpu,
        started_at=started_at,
        wall_s=wall,
        phases_enabled=req.phases,
        inject_slowdown=req.inject_slowdown,
        inject_work=req.inject_work,
        profile_steps=req.profile_steps,
        exit_code=code,
    )


def _series_records(req: RunRequest, record: Run, done: list[Run]) -> list[Run]:
    """One record per item of a series run (``run_id`` of the process plus ``-i``): the item's own result (``done``),
    or, for an item that a crash or timeout of the process kept from finishing, that status and error. ``wall_s`` is the
    item's own time."""
    out = []
    for i, item in enumerate(req.series):
        if i < len(done):
            result = done[i]
            wall = Timing.from_json(result.detail("timing_s")).item_s or 0.0
        else:
            result = Run(
                status=record.status if not record.ok else "crash",
                error=f"not finished: the probe process ended first ({record.error or 'no result for this item'})",
            )
            wall = 0.0
        rec = _headed(
            result,
            item,
            f"{record.run_id}-{i}",
            record.session_id,
            record.gpu,
            record.started_at,
            wall,
            record.exit_code,
        )
        out.append(replace(rec, log=record.log, details={**rec.details, "series_of": record.run_id}))
    return out


def worker_command(req: RunRequest, req_path: Path, res_path: Path) -> list[str]:
    """One worker process, or for a world size N > 1 one job of N processes started by torchrun
    (``torch.distributed.run``, standalone rendezvous on this machine, one process per GPU, gloo on CPU): each rank
    writes ``RESULT.rankR``."""
    py = req.python or sys.executable
    n = req.decomposition.world_size
    launcher = (
        [py]
        if n == 1
        else [py, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}", "--max-restarts=0"]
    )
    return [*launcher, "-m", "harness.measuring.worker", str(req_path), str(res_path)]


def _read_result(path: Path) -> Run | None:
    """The result a worker (or a rank of a job) wrote; None where it wrote none that can be read."""
    try:
        return Run.from_json(json.loads(path.read_text()), str(path)) if path.exists() else None
    except (OSError, json.JSONDecodeError, formats.FormatError):
        return None


_PEER_ERROR = re.compile(r"by peer|gloo|nccl|ProcessGroup|Broken pipe|Connection (reset|closed|refused)", re.I)
_RANK_EXIT = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*exitcode\s*:\s*(-?\d+)")


@dataclass(frozen=True)
class RankResult:
    """One rank of a job as its record's ``ranks`` lists it: its status and error, step times, peak memory and
    losses."""

    rank: int
    status: str
    error: str | None
    step_times_ms: tuple[float, ...] | None
    peak_reserved_bytes: int | None
    peak_allocated_bytes: int | None
    losses: tuple[float | None, ...] | None

    @classmethod
    def of(cls, rank: int, res: Run | None, code: int | None) -> RankResult:
        """The rank's part of its result ``res``, or, for a rank that wrote none, what torchrun said of its exit code
        (``code``, None where it said nothing)."""
        if res is None:
            name = (
                signal.Signals(-code).name
                if code is not None and code < 0 and -code in signal.Signals._value2member_map_
                else None
            )
            error = (
                f"killed by {name}" if name else f"exited with code {code}" if code is not None else "wrote no result"
            )
            return cls(rank, "crash", error + " (torchrun)", None, None, None, None)
        return cls(
            rank,
            res.status or "crash",
            res.error,
            res.step_times_ms,
            res.peak_reserved_bytes,
            res.peak_allocated_bytes,
            res.losses,
        )


def _set(run: Run, **values) -> Run:
    """``run`` with typed ``values``; one that is not None is no longer written as null (``details``)."""
    kept = {k: v for k, v in run.details.items() if k not in values or values[k] is None}
    return replace(run, **values, details=kept)


def merge_ranks(res_path: Path, world: int, log_path: Path) -> Run | None:
    """The record of a job of ``world`` ranks: rank 0's result, with every rank's step times, peak memory, losses and
    status under ``ranks``; peak memory is the largest of any rank (the per-GPU figure the memory verdict reads), losses
    the mean over ranks per step (each rank trains its share of the batch). A failed rank makes the job fail: status and
    error name the rank; a rank that wrote nothing (killed by a signal) is found in torchrun's summary in the log, also
    when no rank wrote anything (torchrun stopped rank 0 before it could write its own error). None where there is
    nothing to merge."""
    ranks = [_read_result(Path(f"{res_path}.rank{r}")) for r in range(world)]
    exits = {int(r): int(c) for r, c in _RANK_EXIT.findall(log_tail(log_path, 20000))}  # torchrun's failure summary
    if not any(ranks) and not exits:  # nothing to merge: the caller says the job wrote no result
        return None
    per_rank = [RankResult.of(r, res, exits.get(r)) for r, res in enumerate(ranks)]
    # When one rank fails the others fail after it: a peer's collective breaks (gloo/NCCL "connection reset by peer"),
    # or torchrun stops them with SIGTERM. Blame, in this order: a rank with an error of its own; a rank killed by a
    # signal other than torchrun's SIGTERM; torchrun's "first observed failure"; the first rank that failed.
    bad = [x for x in per_rank if x.status != "ok"]
    own = [x for x in bad if x.error and "(torchrun)" not in x.error and not _PEER_ERROR.search(x.error)]
    killed = [
        x for x in bad if x.error and x.error.startswith("killed by ") and not x.error.startswith("killed by SIGTERM")
    ]
    log = log_tail(log_path, 20000)
    root = _RANK_EXIT.search(log[log.rfind("Root Cause") :]) if "Root Cause" in log else None
    by_root = [per_rank[int(root.group(1))]] if root and int(root.group(1)) < world else []
    culprit = next(iter(own + killed + by_root + bad), None)
    out = ranks[0] or Run(status="crash")
    out = replace(out, details={**out.details, "ranks": [asdict(x) for x in per_rank], "world_size": world})
    if culprit is not None:
        return replace(
            out,
            status=culprit.status,
            error=f"rank {culprit.rank}: {culprit.error}",
            details={**out.details, "failed_rank": culprit.rank},
        )
    peaks = [x.peak_reserved_bytes for x in per_rank if x.peak_reserved_bytes is not None]
    allocs = [x.peak_allocated_bytes for x in per_rank if x.peak_allocated_bytes is not None]
    out = _set(
        out, peak_reserved_bytes=max(peaks) if peaks else None, peak_allocated_bytes=max(allocs) if allocs else None
    )
    losses = [x.losses for x in per_rank if x.losses]
    if losses and all(len(x) == len(losses[0]) for x in losses):
        out = _set(out, losses=tuple(sum(v) / len(v) for v in zip(*losses)))
    return out
