"""The typed core: a function that measures returns its result, and no caller reads back a file that a call it made in
the same process has just written; every file of a results dir carries its format version, and old files load."""

import ast
import json
from pathlib import Path

import pytest

from harness.results import formats
from harness.results.comparison import ComparisonResult
from harness.results.suite_report import SuiteReport
from harness.results.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
MEASURES = {
    "interleave",
    "census",
    "compare",
    "ab",
    "confirm",
    "recover",
    "write_report",
    "run_case",
    "side_by_side",
    "fresh_fallback",
    "run_rounds",
}
READS = {"read_jsonl", "read_records", "own_report", "read_text", "load", "loads"}


def _called(node: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def test_no_caller_reads_back_what_a_measurement_it_called_wrote():
    """A function of the package that calls a measurement takes its result from the call: it reads no file at all."""
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls = _called(node)
                if (calls & MEASURES) and (calls & READS) and node.name not in MEASURES:
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} calls {sorted(calls & MEASURES)} "
                        f"and reads {sorted(calls & READS)}"
                    )
    assert not found, "\n".join(found)


def test_a_format_upgrades_old_files_and_refuses_newer_ones():
    fmt = formats.Format("thing", 2, {0: lambda d: d, 1: lambda d: {**d, "b": d.get("a")}})
    assert fmt.read({"a": 1}) == {"a": 1, "b": 1, "format": 2}  # no key: version 0, upgraded twice
    assert fmt.stamp({"a": 1, "format": 0}) == {"format": 2, "a": 1}
    with pytest.raises(
        formats.FormatError, match="thing format 3 is newer than this harness reads .2.; update the harness"
    ):
        fmt.read({"format": 3})
    with pytest.raises(formats.FormatError, match="not a thing"):
        fmt.read([1])
    with pytest.raises(ValueError, match="no upgrade from version"):
        formats.Format("gap", 2, {0: lambda d: d})


def _committed_files():
    """Every report, progress file and first run and block record of the evidence data committed under docs/evidence."""
    import gzip

    for archive in sorted((ROOT / "docs" / "evidence").glob("*/*.jsonl.gz")):
        seen = set()
        with gzip.open(archive, "rt", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                name = rec["file"].rsplit("/", 1)[-1]
                if name in ("report.json", "progress.json") and "json" in rec:
                    yield archive.parent.name, name, rec["json"]
                elif name in ("runs.jsonl", "blocks.jsonl") and "record" in rec and rec["file"] not in seen:
                    seen.add(rec["file"])
                    yield archive.parent.name, name, rec["record"]


def test_the_committed_files_of_today_load_through_their_formats():
    """Files written before the format key existed are version 0: each loads, upgraded, as the type it is, and a
    report's type writes it back as read."""
    counts = {}
    for page, name, data in _committed_files():
        where = f"{page}: {name}"
        if name == "progress.json":
            assert formats.PROGRESS.read(data, where)["format"] == formats.PROGRESS.version
        elif name == "runs.jsonl":
            assert formats.RUN.read(data, where)["format"] == formats.RUN.version
        elif name == "blocks.jsonl":
            assert formats.BLOCK.read(data, where)["format"] == formats.BLOCK.version
        elif "settings" in data:  # an interleaved comparison's report
            made = ComparisonResult.from_json(data, ".", where=where)
            assert made.to_json() == formats.COMPARISON.read(data, where) and (
                made.verdict is None or made.verdict.outcome
            )
        elif "verdicts" in data:
            report = SuiteReport.from_json(data, where)
            assert report.exit_code in (0, 1) and report.to_json() == formats.SUITE_REPORT.read(data, where)
        counts[name] = counts.get(name, 0) + 1
    assert min(counts.get(k, 0) for k in ("report.json", "progress.json", "runs.jsonl", "blocks.jsonl")) >= 10, counts


def test_a_verdict_keeps_every_key_it_was_written_with():
    raw = {"outcome": "regression", "message": "B/A x1.05", "ratio": 1.05, "lo": 1.02, "hi": 1.08, "pairs": 40}
    v = Verdict.from_json(raw)
    assert v.failed and v.ratio == 1.05 and v.interval == (1.02, 1.08) and v.to_json() == raw
    assert Verdict.from_json(None) is None and Verdict.from_json({"message": "no outcome"}) is None


def test_a_comparisons_verdict_has_typed_figures_and_writes_the_same_json():
    """ratio, interval, test, alpha and unit are the verdict's fields, not lookups in its details; the JSON it was read
    from comes back the same (a figure written as null stays as written)."""
    from dataclasses import fields

    raw = {
        "outcome": "pass",
        "message": "pass: B/A x1.001",
        "ratio": 1.001,
        "lo": 0.99,
        "hi": 1.012,
        "p_regression": 0.01,
        "alpha": 0.025,
        "pairs": 40,
        "unit": "launch",
        "test": "t",
        "unit_rule": "launch",
    }
    made = ComparisonResult.from_json({"settings": {}, "verdict": raw}, ".")
    v = made.verdict
    assert {"ratio", "interval", "test", "alpha", "unit"} <= {f.name for f in fields(Verdict)}
    assert (v.ratio, v.interval, v.test, v.alpha, v.unit) == (1.001, (0.99, 1.012), "t", 0.025, "launch")
    assert set(v.details) == {"p_regression", "pairs", "unit_rule"} and v.to_json() == raw and not v.failed
    odd = {"outcome": "fail", "message": "no ratio", "ratio": None, "lo": 0.9}
    w = Verdict.from_json(odd)
    assert w.ratio is None and w.interval is None and w.details == {"ratio": None, "lo": 0.9} and w.to_json() == odd
    with pytest.raises(ValueError, match="ratio given both as a field and in its details"):
        Verdict("pass", "x", {"ratio": 1.0}, ratio=1.0)


def _resolves(ref: str) -> bool:
    import importlib

    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def test_every_dotted_name_the_code_and_the_docs_give_exists():
    """A docstring or a page that names ``harness.x.y`` names something that is there (no stale references)."""
    import re

    texts = [*sorted((ROOT / "harness").rglob("*.py")), *sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    refs = {m for p in texts for m in re.findall(r"\bharness(?:\.[A-Za-z_][A-Za-z0-9_]*)+", p.read_text())}
    missing = sorted(r for r in refs if not _resolves(r))
    assert not missing, f"names that do not exist: {missing}"


def test_every_option_is_declared_once_in_the_options_module():
    """The commands add their options from harness.options (``opt.add``); only positional arguments are added by
    hand."""
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path.name == "options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("add_argument", "addoption")
            ):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("-"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {first.value}")
    assert not found, "options declared outside harness/options.py:\n" + "\n".join(found)


def _census(device: str) -> dict:
    """A census of today's shape, as a run record holds it (``harness.measuring.census``), written by hand."""
    cuda = device == "cuda"
    by_call = {"cudaStreamSynchronize": 2.0, "cudaDeviceSynchronize": 1.0, "cudaMemcpyAsync": 3.0, "memcpy_dtoh": 3.0}
    return {
        "fits": True,
        "device": device,
        "logging_steps": 2,
        "steps": [5, 8],
        "n": 4,
        "ops": 1200.0,
        "ops_by_name": {"aten::mm": 40.0},
        "kernels": 310.0 if cuda else None,
        "kernels_by_name": {"gemm": 40.0} if cuda else None,
        "launch_calls": 310.0 if cuda else None,
        "syncs": by_call if cuda else None,
        "alloc": {"cudaMalloc": 0.25, "cudaFree": 0.0} if cuda else None,
        "kernel_ms": 12.5 if cuda else None,
        "kernel_ms_by_name": {"gemm": 4.0} if cuda else None,
        "comm_kernel_ms": 0.0 if cuda else None,
        "cpu_op_ms": None if cuda else 30.1,
        "cpu_op_ms_by_name": None if cuda else {"aten::mm": 9.0},
        "attention_backend": "flash" if cuda else "math",
        "attention_names": ["aten::_scaled_dot_product_flash_attention"],
        "timeline": {"error": "not laid out"},
        "window": {"ops": 4800},
        "memory": {
            "peak_reserved_bytes": 2**30 if cuda else None,
            "peak_allocated_bytes": 2**29 if cuda else None,
            "allocated_per_step": 1024.0,
            "allocated_by_op": {"aten::mm": 512.0},
        },
        "counters": {},
        "tokens": {"real": 100.0, "padded": 128.0},
        "python_calls": None,
        "python_method": None,
        "python_steps": None,
        "python_reason": "not counted",
        "overhead": {"profiled_ms": 3.0, "python_counted_ms": None},
        "window_probe": None,
        "config": {"dtype": "torch.float32"},
    }


def _runs(*censuses: dict):
    from harness.results.run import Run
    from harness.results.runs import Runs

    records = [Run.from_json({"decomposition_id": "4x1", "status": "ok", "census": c}) for c in censuses]
    return Runs("s", "tiny-qwen3", tuple(records), 0)


def test_a_census_is_typed_its_device_counts_none_on_a_cpu():
    """``Runs.census(d)`` is a Census: its counts are fields, the ones a CPU lacks None; its JSON is the record's."""
    from harness.results.census import Census

    cpu = _runs(_census("cpu")).census("4x1")
    assert isinstance(cpu, Census) and cpu.device == "cpu" and cpu.ops == 1200.0 and cpu.cpu_op_ms == 30.1
    assert (cpu.kernels, cpu.syncs, cpu.d2h_copies, cpu.cuda_malloc, cpu.peak_reserved_bytes) == (None,) * 5
    gpu = _runs(_census("cpu"), _census("cuda")).census("4x1")  # the last fitted census of the split
    assert isinstance(gpu.kernels, float) and gpu.kernels == 310.0 and gpu.kernel_ms == 12.5
    assert (gpu.syncs, gpu.d2h_copies, gpu.cuda_malloc, gpu.attention) == (3.0, 3.0, 0.25, "flash")
    assert (gpu.peak_reserved_bytes, gpu.real_tokens, gpu.steps) == (2**30, 100.0, (5, 8))
    assert gpu.details["window"] == {"ops": 4800} and "memory" not in gpu.details
    for device in ("cpu", "cuda"):
        raw = _census(device)
        made = Census.from_json(raw)
        assert made.to_json() == raw and Census.from_json(json.loads(json.dumps(made.to_json()))) == made
    unfit = {"fits": False, "device": "cpu", "logging_steps": 2, "steps": None, "n": None, "reason": "too short"}
    assert Census.from_json(unfit).to_json() == unfit and Census.from_json(unfit).ops is None
    assert _runs(unfit).census("4x1") is None and _runs().census("4x1") is None


def test_a_suite_reports_verdicts_are_typed_and_its_json_comes_back():
    """``SuiteReport.verdicts[i]`` is a Verdict (kind, case, outcome, interval, ...); a confirmed verdict's interleaved
    comparison is one too; the report's JSON comes back as it was read."""
    raw = {
        "gpu": "cpu",
        "session_id": "s1",
        "rows": [{"workload": "tiny-qwen3", "decomposition": "4x1"}],
        "verdicts": [
            {"kind": "runtime", "case": "tiny-qwen3-4x1", "outcome": "regression", "message": "slower", "repro": "x"},
            {"kind": "memory", "case": "tiny-qwen3-4x1", "outcome": "pass", "message": "ok", "repro": None},
            {
                "kind": "runtime",
                "case": "tiny-qwen3-1x4",
                "outcome": "unconfirmed",
                "message": "slower; unconfirmed",
                "interleaved": {"outcome": "pass", "message": "B/A x1.0", "ratio": 1.0, "lo": 0.99, "hi": 1.01},
                "stored_message": "slower",
            },
        ],
    }
    made = SuiteReport.from_json(raw)
    first, memory, third = made.verdicts
    assert isinstance(first, Verdict) and (first.kind, first.case, first.repro) == ("runtime", "tiny-qwen3-4x1", "x")
    assert memory.repro is None and memory.details == {"repro": None}  # a null stays as written
    assert third.interleaved is not None and third.interleaved.interval == (0.99, 1.01) and third.interval is None
    assert made.failing == [first] and made.exit_code == 1 and made.verdict_of("memory", "tiny-qwen3-4x1") == memory
    assert (made.gpu, made.session_id, made.sections["rows"][0]["decomposition"]) == ("cpu", "s1", "4x1")
    assert made.to_json() == {**raw, "format": formats.SUITE_REPORT.version}
    assert SuiteReport.from_json(json.loads(json.dumps(made.to_json()))) == made
    assert SuiteReport().exit_code == 0 and SuiteReport().to_json()["verdicts"] == []


def test_a_comparisons_verdict_is_a_field_and_a_null_verdict_stays_null():
    raw = {"settings": {"session_id": "c1"}, "verdict": {"outcome": "regression", "message": "m", "ratio": 1.2}}
    made = ComparisonResult.from_json(raw, ".")
    assert made.verdict is not None and made.verdict.ratio == 1.2 and made.exit_code == 1 and made.session_id == "c1"
    assert "verdict" not in made.sections and made.to_json() == {**raw, "format": formats.COMPARISON.version}
    none = ComparisonResult.from_json({"settings": {}, "verdict": None}, ".", exit_code=3)
    assert none.verdict is None and none.exit_code == 3 and none.to_json()["verdict"] is None


def test_an_advices_comparisons_are_verdicts():
    from harness.results.advice import Advice

    raw = {
        "workload": "tiny-qwen3",
        "gpu": "cpu",
        "answer": {"recommended": "4x1"},
        "compared": {
            "1x4": {"outcome": "regression", "ratio": 1.3, "lo": 1.2, "hi": 1.4, "message": "m", "block_steps": 4},
            "2x2": {"outcome": "inconclusive", "ratio": None, "lo": None, "hi": None, "message": "no verdict"},
        },
        "failed": ["2x2"],
    }
    made = Advice.from_json(raw)
    assert made.recommended == "4x1" and made.failed == ("2x2",) and made.compared["1x4"].interval == (1.2, 1.4)
    assert made.compared["1x4"].details == {"block_steps": 4} and made.compared["2x2"].ratio is None
    assert made.to_json() == {**raw, "format": formats.ADVICE.version}


def test_a_suite_reports_rows_are_typed_and_its_json_comes_back():
    """report.json's rows are ReportRows (spreads, work verdict, diagnosis and census as typed parts), its verdicts
    Verdicts, its machine a ReportEnv; the JSON comes back as it was read, a key it does not type included."""
    from dataclasses import fields

    from harness.results.report_row import Diagnosis, ReportRow, Spread
    from harness.results.suite_report import ReportData, ReportEnv

    spread = {"median": 130.0, "min": 128.7, "max": 131.3, "n": 5, "cv": 0.01, "fmt": ".1f"}
    row = dict.fromkeys(f.name for f in fields(ReportRow))  # every key, in order; those not set below are null
    row.update(workload="tiny-qwen3", decomposition="1x4", micro_batch=1, grad_accum=4, world_size=1)
    row.update(effective_batch=4, steps=8, runs=5, ok=4, failures=["timeout"], step_time_ms=spread)
    row.update(phases_ms={"data": 1.0}, verdict="regression", ratio=1.3, ratio_lo=1.29, ratio_hi=1.31)
    row.update(step_traces_ms=[[130.0, 131.0]], warmup_steps=2, work={"outcome": "changed", "lines": ["ops +1"]})
    # the diagnosis's head, then what it found: peak_flops_of is written with the FLOPs, even when unknown
    row["diagnosis"] = {"step_ms": 130.0, "kernel_ms": None, "kernels": None, "ops": 10.0}
    row["diagnosis"].update(flops_per_step=1e9, peak_flops_of=None)
    row["census"] = {"ops": 10.0, "kernels": None, "kernel_ms": None, "cpu_op_ms": 3.0, "python_calls": None}
    row["census"].update(syncs=None, alloc=None, attention_backend="math", steps=[3, 4])
    raw = {
        "gpu": "cpu",
        "session_id": "s1",
        "command": "pytest perftests",
        "inject_slowdown": 0.0,
        "rows": [row],
        "incomplete": None,
        "notes": [],
        "data_unread": [],
        "verdicts": [{"kind": "runtime", "case": "tiny-qwen3-1x4", "outcome": "regression", "message": "slower"}],
        "recorded": None,
        "env": dict.fromkeys(f.name for f in fields(ReportEnv)),
        "versions": {"torch": "2.5"},
        "baseline_versions": {"tiny-qwen3": {"torch": "2.4"}},
        "confirm": {"cases": []},
    }
    made = ReportData.from_json(raw)
    (r,) = made.rows
    assert isinstance(r, ReportRow) and r.case == "tiny-qwen3-1x4" and r.step_time_ms == Spread(**spread)
    assert r.step_time_ms.text() == "130.0 [128.7-131.3]" and r.failures == ("timeout",) and r.work.lines == ("ops +1",)
    assert isinstance(r.diagnosis, Diagnosis) and r.diagnosis.mfu is None and r.census.steps == (3, 4)
    assert made.verdicts[0].failed and made.env.gpu is None and made.extra == {"confirm": {"cases": []}}
    assert made.to_json() == {"format": formats.SUITE_REPORT.version, **raw}
    assert ReportData.from_json(json.loads(json.dumps(made.to_json()))) == made
