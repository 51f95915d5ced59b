"""Write the imported t4 and l4 baselines from published-measurements.md (copied beside this file).

    python baselines/published/make.py

Only train_runtime per run (100 steps) is imported; runtime and ordering verdicts apply to these
baselines, memory does not (the published peak was a mean of per-step peaks, not a run-wide maximum).
"""

from pathlib import Path

from harness.judging import baseline as bl
from harness.spec import Workload

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "baselines/published/published-measurements.md"
VERSIONS = {
    "torch": "2.11.0+cu128",
    "transformers": "5.15.0",
    "trl": "1.10.0",
    "peft": "0.20.0",
    "accelerate": "1.14.0",
}
PUBLISHED = {
    "t4": {
        "gpu": "Tesla T4 (16 GB)",
        "runs": {
            "1x4": [(268.91, "replication"), (289.57, "replication"), (290.53, "replication")],
            "2x2": [(238.72, "replication"), (260.76, "replication"), (280.18, "replication")],
            "4x1": [(244.96, "replication"), (245.78, "replication"), (264.79, "replication")],
        },
        "reference_only": {
            "original single run (phase profiler attached, per-step peak memory)": {
                "1x4": {"train_runtime_s": 287.6, "step_ms": 2871, "peak_reserved_per_step_gib": 5.45},
                "2x2": {"train_runtime_s": 258.8, "step_ms": 2585, "peak_reserved_per_step_gib": 5.58},
                "4x1": {"train_runtime_s": 238.2, "step_ms": 2379, "peak_reserved_per_step_gib": 5.81},
            }
        },
    },
    "l4": {
        "gpu": "NVIDIA L4 (24 GB)",
        "runs": {
            "1x4": [
                (219.02, "runtime 1, order A then C"),
                (225.08, "runtime 2, order C then A"),
                (213.02, "third machine, another cloud"),
            ],
            "4x1": [
                (125.54, "runtime 1, order A then C"),
                (124.47, "runtime 2, order C then A"),
                (124.76, "third machine, another cloud"),
            ],
        },
        "reference_only": {"third machine": {"2x2": "slightly faster than 4x1 (no figure given)"}},
    },
}


def main() -> None:
    w = Workload.load(ROOT / "workloads" / "qwen3-1.7b-lora-pretrained.toml")
    for gpu, pub in PUBLISHED.items():
        decs = {}
        for d, runs in pub["runs"].items():
            decs[d] = {
                "decomposition": w.decomposition(d).as_dict(),
                "losses": None,
                "runs": [
                    {
                        "run_id": f"published-{gpu}-{d}-{i + 1}",
                        "host": note,
                        "train_runtime_s": t,
                        "step_time_median_ms": None,
                        "peak_reserved_bytes": None,
                        "peak_allocated_bytes": None,
                        "tokens_per_s": None,
                        "steady_step_times_ms": None,
                    }
                    for i, (t, note) in enumerate(runs)
                ],
            }
        data = {
            "schema": bl.SCHEMA,
            "gpu": gpu,
            "workload": {"name": w.name, "hash": w.hash, "spec": w.to_dict()},
            "env": {"gpu": pub["gpu"], "versions": VERSIONS},
            "provenance": {
                "kind": "imported",
                "source": SOURCE,
                "command": "python baselines/published/make.py",
                "note": "train_runtime per run over 100 steps, as published; only runtime and ordering verdicts apply",
                "reference_only": pub["reference_only"],
            },
            "thresholds": dict(bl.DEFAULT_THRESHOLDS),
            "decompositions": decs,
        }
        print(bl.write_json(bl.path_for(ROOT / "baselines", gpu, w.name), data))


if __name__ == "__main__":
    main()
