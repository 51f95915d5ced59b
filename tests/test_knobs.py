"""The environment variables of the suite are declared once (:mod:`harness.knobs`): no other module reads one by its
name, and each is documented in docs/environment.md."""

import ast
import re
from pathlib import Path

from harness import knobs

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"HARNESS_[A-Z_]+")


def test_only_the_knobs_module_names_an_environment_variable_of_the_suite():
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path.name == "knobs.py" and path.parent.name == "harness":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value}")
    assert not found, "read through harness.knobs instead:\n" + "\n".join(found)


def test_every_knob_is_documented_and_reads_an_empty_value_as_unset(monkeypatch):
    page = (ROOT / "docs" / "environment.md").read_text()
    for knob in knobs.KNOBS:
        assert f"`{knob.name}`" in page, knob.name
    monkeypatch.setenv("HARNESS_MACHINE", "  ")
    assert knobs.MACHINE.get() is None
    monkeypatch.setenv("HARNESS_MACHINE", " l4-gcp ")
    assert knobs.MACHINE.get() == "l4-gcp"
