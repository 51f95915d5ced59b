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
MEASURES = {"interleave", "census", "compare", "ab", "confirm", "recover", "write_report", "run_case", "side_by_side", "fresh_fallback",
            "run_rounds"}
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
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} calls {sorted(calls & MEASURES)} "
                                 f"and reads {sorted(calls & READS)}")
    assert not found, "\n".join(found)


def test_a_format_upgrades_old_files_and_refuses_newer_ones():
    fmt = formats.Format("thing", 2, {0: lambda d: d, 1: lambda d: {**d, "b": d.get("a")}})
    assert fmt.read({"a": 1}) == {"a": 1, "b": 1, "format": 2}  # no key: version 0, upgraded twice
    assert fmt.stamp({"a": 1, "format": 0}) == {"format": 2, "a": 1}
    with pytest.raises(formats.FormatError, match="thing format 3 is newer than this harness reads .2.; update the harness"):
        fmt.read({"format": 3})
    with pytest.raises(formats.FormatError, match="not a thing"):
        fmt.read([1])
    with pytest.raises(ValueError, match="no upgrade from version"):
        formats.Format("gap", 2, {0: lambda d: d})


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "data").rglob("report.json")))
def test_committed_reports_of_today_load_through_their_format(path):
    data = json.loads(path.read_text())
    if "settings" in data:  # an interleaved comparison's
        made = ComparisonResult.from_json(data, path.parent, where=str(path))
        assert made.to_json()["format"] == formats.COMPARISON.version and (made.verdict is None or made.verdict.outcome)
    else:
        report = SuiteReport.from_json(data, str(path))
        assert report.exit_code in (0, 1) and report.to_json()["format"] == formats.SUITE_REPORT.version


def test_a_verdict_keeps_every_key_it_was_written_with():
    raw = {"outcome": "regression", "message": "B/A x1.05", "ratio": 1.05, "lo": 1.02, "hi": 1.08, "pairs": 40}
    v = Verdict.from_json(raw)
    assert v.failed and v.ratio == 1.05 and v.interval == (1.02, 1.08) and v.to_json() == raw
    assert Verdict.from_json(None) is None and Verdict.from_json({"message": "no outcome"}) is None
