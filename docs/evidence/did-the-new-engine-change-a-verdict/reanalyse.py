"""The verdict of every stored H200 interleaved comparison of a data checkout, judged again by the harness on
PYTHONPATH."""

import pathlib
import sys

try:
    from harness.sidebyside.finish import reanalyse
except ImportError:  # the code before the typed core (2026-12-04) kept it in the interleave command's module
    from harness.commands.interleave import reanalyse

root = pathlib.Path(sys.argv[1])
for b in sorted(root.glob("docs/results/**/blocks.jsonl")):
    if "h200" not in str(b) or not (b.parent / "report.json").exists():
        continue
    try:
        r = reanalyse(b.parent)
        r = r.to_json() if hasattr(r, "to_json") else r  # a typed analysis since the comparison's settings were typed
        v = r.get("verdict") or {}
        print(
            b.parent.relative_to(root),
            v.get("outcome"),
            v.get("ratio"),
            v.get("lo"),
            v.get("hi"),
            (r.get("mds") or {}).get("slowdown"),
        )
    except Exception as e:
        print(b.parent.relative_to(root), "ERROR", type(e).__name__, str(e)[:100])
