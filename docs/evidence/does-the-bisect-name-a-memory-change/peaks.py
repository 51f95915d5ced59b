"""The peak memory of each trl release the GPU bisect measured, and the boundaries its report names.

python docs/evidence/does-the-bisect-name-a-memory-change/peaks.py [trl-1.12.0-1.15.0-h100.jsonl.gz]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

import raw  # noqa: E402

GIB = 2**30


def main(path: Path) -> None:
    files = raw.load(path)
    censuses = [name for name in files if name.startswith("bisect/census/") and name.endswith("runs.jsonl")]
    runs = [files[name][0] for name in censuses]
    print(f"{files['nvidia-smi.txt'].splitlines()[-1]}; boot id {files['boot_id'][:8]}")
    for r in sorted(runs, key=lambda r: [int(x) for x in r["env"]["versions"]["trl"].split(".")]):
        c = r["census"]
        print(
            f"  trl {r['env']['versions']['trl']:<7} peak reserved {r['peak_reserved_bytes'] / GIB:.2f} GiB, "
            f"allocated {r['peak_allocated_bytes'] / GIB:.2f} GiB; "
            f"aten ops {c['ops']:,.1f}, kernels {c['kernels']:,.1f}, "
            f"loss_type {c['config']['args']['loss_type']}"
        )
    report = files["bisect/report.json"]
    print("boundaries named:", report["attribution"]["peak reserved memory"])
    for ch in report["changes"]:
        print(f"  {ch['last_good']} -> {ch['first_bad']}: {'; '.join(ch['memory'])}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "trl-1.12.0-1.15.0-h100.jsonl.gz")
