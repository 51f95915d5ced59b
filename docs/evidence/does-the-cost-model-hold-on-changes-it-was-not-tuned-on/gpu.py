"""Measures and censuses the comparisons of ``cases.toml`` on the lent GPU, in their order, from a copy of the tree.

Run on the device from ``/tmp/snap`` (a copy of the tree, with .whl's wheels unpacked in ``/tmp/site`` and each folder
of ``.whl/v/`` in ``/tmp/ov/<name>``), in the background: ``setsid nohup python3 gpu.py /tmp/run &``. For each case,
in ``/tmp/run/<case>/``: ``census/a`` and ``census/b`` (``python -m harness census --repeats 1`` in each side's
environment), ``timed`` (one timed run under A, ``pytest perftests --repeats 1``) and ``side-by-side`` (``python -m
harness interleave --python-a A --python-b B --budget-minutes M``, the defaults otherwise). ``DONE`` marks the end.
The predictions are made afterwards, on any machine: ``python -m harness cost --diff census/a census/b --timing timed``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SNAP = Path("/tmp/snap")
SITE = Path("/tmp/site")
OVERLAYS = Path("/tmp/ov")


def environment(layers: list[str]) -> str:
    """A virtualenv of the image's interpreter that sees ``layers`` over .whl's packages, the tree and the image's."""
    name = "+".join(layers) or "image"
    root = Path("/tmp/venvs") / name
    python = root / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", root], check=True)
        site = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        paths = [OVERLAYS / layer for layer in layers] + [SITE, SNAP, Path(sysconfig.get_paths()["purelib"])]
        Path(site, "harness-here.pth").write_text("".join(f"{p}\n" for p in paths))
    return str(python)


def step(log: Path, argv: list[str], timeout: float) -> int:
    """Runs one command, its output in ``log``; returns its exit code (124 on the timeout). No PYTHONPATH: each
    environment's packages come from its own path file, in its order."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with log.open("w") as out:
        try:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, cwd=SNAP, env=env)
            return done.returncode
        except subprocess.TimeoutExpired:
            return 124


def run_case(case: dict, out: Path, workloads: Path) -> dict:
    a, b = environment(case["a"]), environment(case["b"])  # the launcher's own is environment([])
    w, d = case["workload"], case["decomposition"]
    common = ["--workload", w, "--workloads-dir", str(workloads)]
    rcs: dict[str, int] = {}
    versions = "import torch, transformers, trl, peft\nfor m in (torch, transformers, trl, peft): print(m.__version__)"
    for side, py in (("a", a), ("b", b)):
        rcs[f"versions-{side}"] = step(out / f"versions-{side}.txt", [py, "-c", versions], 120)
    for side, py in (("a", a), ("b", b)):
        rcs[f"census-{side}"] = step(
            out / f"census-{side}.log",
            [
                py,
                "-m",
                "harness",
                "census",
                *common,
                "--decomposition",
                d,
                "--repeats",
                "1",
                "--results-dir",
                str(out / "census" / side),
            ],
            600,
        )
    rcs["timed"] = step(
        out / "timed.log",
        [
            a,
            "-m",
            "pytest",
            "perftests",
            "--gpu=auto",
            *common,
            "-k",
            d,
            "--repeats",
            "1",
            "--results-dir",
            str(out / "timed"),
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        600,
    )
    rcs["side-by-side"] = step(
        out / "side-by-side.log",
        [
            environment([]),
            "-m",
            "harness",
            "interleave",
            *common,
            "--decomposition",
            d,
            "--python-a",
            a,
            "--python-b",
            b,
            "--budget-minutes",
            str(case["budget_minutes"]),
            "--results-dir",
            str(out / "side-by-side"),
        ],
        case["budget_minutes"] * 60 + 240,
    )
    for request in out.rglob("*.request.json"):
        request.unlink()
    return rcs


def main(run: Path) -> None:
    run.mkdir(parents=True, exist_ok=True)
    Path(run, "boot_id").write_text(Path("/proc/sys/kernel/random/boot_id").read_text())
    smi = [
        "nvidia-smi",
        "--query-gpu=name,clocks.sm,clocks.max.sm,power.limit,driver_version,temperature.gpu",
        "--format=csv",
    ]
    Path(run, "nvidia-smi.txt").write_text(subprocess.run(smi, capture_output=True, text=True).stdout)
    workloads = Path("/tmp/workloads")
    workloads.mkdir(exist_ok=True)
    for spec in [*(SNAP / "workloads").glob("*.toml"), *(HERE / "workloads").glob("*.toml")]:
        shutil.copy(spec, workloads / spec.name)
    cases = tomllib.loads((HERE / "cases.toml").read_text())["case"]
    for case in cases:
        out = run / case["name"]
        out.mkdir(exist_ok=True)
        started = time.time()
        rcs = run_case(case, out, workloads)
        record = {"case": case["name"], "start": started, "seconds": round(time.time() - started, 1), "rc": rcs}
        with Path(run, "cases.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")
    Path(run, "DONE").write_text("done\n")


if __name__ == "__main__":
    os.environ["PYTHONUNBUFFERED"] = "1"
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/run"))
