"""``python -m harness doctor``: what this machine is to the suite, before its first run or a runner's set-up.

It prints the detected GPU and the runner label to give it (``gpu-<name>``, the name as
:func:`harness.measuring.env.detect_gpu` makes it, which is what ``--gpu auto`` resolves to), the driver, CUDA, torch
and library versions, the workloads that would run here and which of them have a baseline for this GPU, what the nightly
would do here tonight (from nightly.toml), whether the pull-request check is set up (its workflow, its labels, the GPUs
it runs on), and what is missing. It makes no run and writes nothing; what it cannot check from here, it says so. Exit
0, or 2 when a workload cannot run (a file that does not load, or a local data file or model folder that does not pass;
one line each in the output) or nightly.toml is wrong (a bad key or value, a workload name that no file declares, an A/B
whose workload cannot run or lacks one of its splits).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlparse

from harness.commands.doctor_nightly import NightlyPlan, PrCheck, nightly, nightly_lines, pr_check, pr_lines
from harness.judging import baseline as bl
from harness.measuring.env import detect_gpu, gpu_names, versions
from harness.spec import SpecError
from harness.spec_folder import load_each

LIBRARIES = ("transformers", "trl", "peft", "accelerate", "datasets", "bitsandbytes")
TOOLS = {
    "gh": "the nightly's issue, pull-request and history steps",
    "jq": "the nightly's regression-issue script",
    "tox": "the nightly's pinned and latest environments",
}


def _nvml() -> tuple[str | None, str | None]:
    """The driver version and the newest CUDA it supports, from NVML or nvidia-smi; (None, None) without a GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            driver, cuda = pynvml.nvmlSystemGetDriverVersion(), pynvml.nvmlSystemGetCudaDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return (driver.decode() if isinstance(driver, bytes) else driver), f"{cuda // 1000}.{cuda % 1000 // 10}"
    except Exception:
        pass
    if not shutil.which("nvidia-smi"):
        return None, None
    try:
        head = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    driver, cuda = re.search(r"Driver Version:\s*([\d.]+)", head), re.search(r"CUDA Version:\s*([\d.]+)", head)
    return (driver.group(1) if driver else None), (cuda.group(1) if cuda else None)


@dataclass(frozen=True)
class Machine:
    """The GPU (as ``--gpu auto`` resolves it) and its device names, the runner label to give it (None without a GPU),
    the driver and the newest CUDA it supports, the CUDA torch was built for, and the software versions (a library:
    None where not installed)."""

    gpu: str
    gpu_names: list[str]
    runner_label: str | None
    driver: str | None
    cuda_driver: str | None
    torch_cuda: str | None
    python: str
    torch: str | None
    libraries: Mapping[str, str | None]


@dataclass(frozen=True)
class Missing:
    """Each tool the nightly uses with where it is on PATH (None: missing), the hub ids the workloads need
    (``hub_for``), whether the hub can be reached (``hub``) and whether a hub token is set."""

    tools: Mapping[str, str | None]
    hub_for: list[str]
    hub: str
    hf_token: bool


@dataclass(frozen=True)
class Facts:
    """Everything doctor says: the machine; the workloads that can run (``workloads``, as :func:`workloads_here`
    lists them) and, one line each, the files that cannot (``broken``, the first of them ``workloads_error``); what the
    nightly and the pull-request check would do here; what is missing."""

    machine: Machine
    workloads_dir: str
    workloads: list[dict]
    broken: Mapping[Path, str]
    nightly: NightlyPlan
    pr_check: PrCheck
    missing: Missing

    @property
    def workloads_error(self) -> str | None:
        return next(iter(self.broken.values()), None)

    def to_json(self) -> dict:
        return {
            **asdict(self.machine),
            "workloads_dir": self.workloads_dir,
            "workloads": self.workloads,
            "workloads_error": self.workloads_error,
            "broken": [{"file": str(p), "line": line} for p, line in self.broken.items()],
            "nightly": self.nightly.to_json(),
            "pr_check": self.pr_check.to_json(),
            "missing": asdict(self.missing),
        }


def machine() -> Machine:
    """The GPU, its runner label, the driver, and the software versions (libraries: None where not installed)."""
    import importlib.metadata

    names = gpu_names()
    gpu = detect_gpu()
    driver, cuda_driver = _nvml() if names else (None, None)
    try:
        import torch

        torch_cuda = torch.version.cuda
    except ImportError:
        torch_cuda = None
    soft = versions()
    libs = {}
    for lib in LIBRARIES:
        try:
            libs[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            libs[lib] = None
    return Machine(
        gpu=gpu,
        gpu_names=names,
        runner_label=f"gpu-{gpu}" if names else None,
        driver=driver,
        cuda_driver=cuda_driver,
        torch_cuda=torch_cuda,
        python=soft["python"],
        torch=soft.get("torch"),
        libraries=libs,
    )


def workloads_here(workloads_dir: Path, baselines_dir: Path, gpu: str, broken: dict | None = None) -> list[dict]:
    """Every workload: whether the suite selects it here (its ``devices``), its baseline for this GPU, and what it needs
    from the hub. A workload file that does not load, or whose inputs on disk do not pass (:mod:`harness.inputs`), goes
    into ``broken`` (file -> its one line) and the others are listed; without ``broken``, the first raises SpecError."""
    from harness.suite.selection import inputs_problem

    out = []
    loaded = load_each(workloads_dir)
    found = dict(loaded.broken)
    for name, w in loaded.workloads.items():
        if (line := inputs_problem(w, loaded.files[name])) is not None:
            found[loaded.files[name]] = line
    if found and broken is None:
        raise SpecError(next(iter(found.values())))
    if broken is not None:
        broken.update(found)
    for name, w in loaded.workloads.items():
        if loaded.files[name] in found:
            continue
        try:
            bl.load(baselines_dir, gpu, w)
            baseline = "ok"
        except bl.MissingBaseline:
            baseline = "missing"
        except bl.BaselineError as exc:
            baseline = f"unusable: {exc}"
        hub = []
        if w.model.init == "pretrained" and not Path(w.model.hub_id).expanduser().is_dir():
            hub.append(
                f"{w.model.hub_id} ({'in' if _cached(w.model.hub_id, w.model.revision) else 'not in'} the local cache)"
            )
        if w.data.source == "hub":
            hub.append(f"dataset {w.data.id}")
        out.append(
            {
                "name": name,
                "devices": list(w.devices),
                "decompositions": [d.id for d in w.decompositions],
                "runs_here": w.runs_on(gpu),
                "baseline": baseline,
                "baseline_path": str(bl.path_for(baselines_dir, gpu, name)),
                "hub": hub,
            }
        )
    return out


def _cached(hub_id: str, revision: str | None) -> bool:
    """Whether the model's config is in the local hub cache (HF_HOME), so that an offline run can load it."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(hub_id, "config.json", revision=revision), str)
    except Exception:  # no huggingface_hub, or an id it refuses
        return False


def hub_status(needed: bool) -> str:
    """Whether the model hub can be reached from here; never a download."""
    if not needed:
        return "not needed (no workload loads from it)"
    if any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return (
            "offline (HF_HUB_OFFLINE): cannot check the hub from here; the model must be in the local cache (HF_HOME)"
        )
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=3).close()
        return f"{host} reachable"
    except OSError as exc:
        return (
            f"{host} not reachable from here ({type(exc).__name__}): cannot check the hub; "
            "the model must be in the local cache (HF_HOME)"
        )


def missing(workloads: list[dict]) -> Missing:
    """Tools on PATH, the hub, and the token: each as found/missing with what needs it."""
    hub_ids = sorted({h for w in workloads for h in w["hub"]})
    return Missing(
        tools={t: shutil.which(t) for t in TOOLS},
        hub_for=hub_ids,
        hub=hub_status(bool(hub_ids)),
        hf_token=bool(os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")),
    )


def facts(workloads_dir: str | Path, baselines_dir: str | Path, project: str | Path) -> Facts:
    """Everything doctor says (:class:`Facts`)."""
    m = machine()
    broken: dict[Path, str] = {}
    ws = workloads_here(Path(workloads_dir), Path(baselines_dir), m.gpu, broken)
    return Facts(
        machine=m,
        workloads_dir=str(workloads_dir),
        workloads=ws,
        broken=broken,
        nightly=nightly(Path(project), m.gpu, ws, broken),
        pr_check=pr_check(Path(project), m.gpu),
        missing=missing(ws),
    )


def _version(v: str | None) -> str:
    return v or "not installed"


def text(f: Facts) -> list[str]:
    """The facts as lines for a person."""
    m = f.machine
    if m.gpu_names:
        names = ", ".join(f"{n} x {name}" if n > 1 else name for name, n in Counter(m.gpu_names).items())
        lines = [f"GPU: {m.gpu} ({names}); give the runner the labels self-hosted, linux, {m.runner_label}"]
    else:
        lines = [
            "GPU: none detected (cpu); the suite runs its CPU workloads here (--gpu cpu); a nightly runner needs a GPU"
        ]
    cuda = f"torch built for CUDA {m.torch_cuda}" if m.torch_cuda else "torch is a CPU build"
    lines.append(
        f"driver: {m.driver or 'none'}; CUDA: {cuda}"
        + (f", the driver supports up to {m.cuda_driver}" if m.cuda_driver else "")
    )
    lines.append(
        f"python {m.python}, torch {_version(m.torch)}; "
        + ", ".join(f"{k} {_version(v)}" for k, v in m.libraries.items())
    )
    lines.append(
        f"workloads ({f.workloads_dir}):"
        + (f" {len(f.broken)} cannot run (BROKEN below), the others can" if f.broken else "")
    )
    lines += [f"  {Path(p).name}: BROKEN, not run: {line}" for p, line in f.broken.items()]
    for w in f.workloads:
        where = (
            "runs here"
            if w["runs_here"]
            else f"not selected here (devices {w['devices']}; run it by name with --workload)"
        )
        base = {"ok": f"baseline {w['baseline_path']}", "missing": f"no baseline for {m.gpu}"}.get(
            w["baseline"], f"baseline {w['baseline']}"
        )
        lines.append(
            f"  {w['name']}: {where}; {base}" + (f"; needs the hub: {', '.join(w['hub'])}" if w["hub"] else "")
        )
    lines += nightly_lines(f.nightly, m.gpu)
    lines += pr_lines(f.pr_check)
    gone = f.missing
    gaps = [t for t, p in gone.tools.items() if p is None]
    lines.append(f"tools and access ({'missing: ' + ', '.join(gaps) if gaps else 'no tool missing'}):")
    lines += [f"  {t}: {'found at ' + p if p else 'MISSING, not on PATH'} ({TOOLS[t]})" for t, p in gone.tools.items()]
    lines.append("  hub" + (f" (for {', '.join(gone.hub_for)})" if gone.hub_for else "") + f": {gone.hub}")
    if m.gpu_names and not m.torch_cuda:
        lines.append(
            "  torch: a CPU build on a GPU machine; set TORCH_PIN and PIP_EXTRA_INDEX_URL for a CUDA build (tox.ini)"
        )
    lines.append(
        f"  HF_TOKEN: {'set' if gone.hf_token else 'not set (needed for gated or private models and datasets only)'}"
    )
    return lines


def doctor(
    *,
    workloads_dir: str | Path,
    baselines_dir: str | Path,
    project: str | Path = ".",
    as_json: bool = False,
    out: Callable[[str], None] = print,
) -> int:
    """Print the facts (text, or JSON with ``as_json``); 0, or 2 when a workload file or nightly.toml does not load,
    nightly.toml names a workload that no file declares, or its A/B cannot run (``ab_error``)."""
    f = facts(workloads_dir, baselines_dir, project)
    out(json.dumps(f.to_json(), indent=2) if as_json else "\n".join(text(f)))
    return 2 if f.workloads_error or f.nightly.refused else 0
