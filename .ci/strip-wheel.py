#!/usr/bin/env python3
"""Copy a transformers wheel without the model folders a LoRA run of a Qwen3 workload never imports, to carry many
releases where a transfer has a size limit (a wheel of 13 MB becomes about 2 MB).

    python .ci/strip-wheel.py transformers-5.25.0-py3-none-any.whl OUT_DIR

The folders kept are ``--keep`` and each one ``from trl import SFTTrainer, SFTConfig`` turns out to need: the wheel is
installed into a scratch folder and imported with this interpreter, and every model folder the import asks for (a
missing module, or a class that ``transformers`` cannot import) is added until the import succeeds. RECORD is rewritten
for the files kept. A workload whose model is not Qwen3 needs its own folder in ``--keep``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

KEEP = "auto,qwen3,qwen2,llama,encoder_decoder,bloom"


def strip(src: Path, out_dir: Path, keep: set[str]) -> Path:
    dst = out_dir / src.name
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        record = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
        rows = []
        for info in zin.infolist():
            p = info.filename.split("/")
            if (
                p[0] == "transformers" and len(p) > 3 and p[1] == "models" and p[2] not in keep
            ) or info.filename == record:
                continue
            data = zin.read(info)
            zout.writestr(info, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{info.filename},sha256={digest},{len(data)}")
        zout.writestr(record, "\n".join(rows + [f"{record},,"]) + "\n")
    return dst


def model_of_class(src: Path) -> dict[str, str]:
    """Class name -> the model folder that defines it."""
    found: dict[str, str] = {}
    with zipfile.ZipFile(src) as z:
        for n in z.namelist():
            p = n.split("/")
            if len(p) == 4 and p[1] == "models" and p[3].endswith(".py"):
                for m in re.finditer(rb"^class (\w+)", z.read(n), re.M):
                    found.setdefault(m.group(1).decode(), p[2])
    return found


def needed(src: Path, out_dir: Path, keep: set[str]) -> set[str]:
    classes = model_of_class(src)
    for _ in range(60):
        dst = strip(src, out_dir, keep)
        with tempfile.TemporaryDirectory() as site:
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", site, str(dst)],
                check=True,
            )
            r = subprocess.run(
                [sys.executable, "-c", "from trl import SFTTrainer, SFTConfig; import peft"],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": site},
            )
        if r.returncode == 0:
            return keep
        m = re.search(r"No module named 'transformers\.models\.(\w+)", r.stderr)
        c = re.search(r"cannot import name '(\w+)' from 'transformers", r.stderr)
        more = m.group(1) if m else classes.get(c.group(1)) if c else None
        if not more or more in keep:
            raise SystemExit(
                f"{src.name}: the stripped wheel does not import ({r.stderr.strip().splitlines()[-1]}); add its folder "
                "to --keep"
            )
        keep = keep | {more}
    raise SystemExit(f"{src.name}: too many folders needed; strip by hand")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("wheel", type=Path)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--keep", default=KEEP, help="model folders always kept (default: %(default)s)")
    a = p.parse_args()
    a.out_dir.mkdir(parents=True, exist_ok=True)
    keep = needed(a.wheel, a.out_dir, set(a.keep.split(",")))
    print(
        f"{a.wheel.name}: kept {','.join(sorted(keep))} -> {a.out_dir / a.wheel.name} "
        f"({(a.out_dir / a.wheel.name).stat().st_size} bytes)"
    )


if __name__ == "__main__":
    main()
