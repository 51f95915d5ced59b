"""The size rule of the house: no function in ``harness/`` over 80 lines. Modules have no line cap: they are split by
what they do.

A function's length is counted from its ``def`` line (decorators not included) to its last line, nested functions and
classes included in their parent."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FUNCTION_LINES = 80


def oversized(root: Path = ROOT / "harness") -> list[str]:
    """One line per function over :data:`MAX_FUNCTION_LINES` below ``root``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            out.append(f"{rel}:{exc.lineno}: does not parse ({exc.msg})")
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out.append(f"{rel}:{node.lineno}: function {node.name} of {n} lines (at most {MAX_FUNCTION_LINES})")
    return out


def test_no_function_over_80_lines():
    found = oversized()
    assert not found, "too long:\n" + "\n".join(found)
