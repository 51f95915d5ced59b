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
    """Files written before the format key existed are version 0: each loads, upgraded, as the type it is."""
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
            assert made.to_json()["format"] == formats.COMPARISON.version and (
                made.verdict is None or made.verdict.outcome
            )
        elif "verdicts" in data:
            assert SuiteReport.from_json(data, where).exit_code in (0, 1)
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
