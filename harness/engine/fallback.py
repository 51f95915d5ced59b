"""When the two sides of a comparison do not fit on the device at once: fresh-process runs, one at a time (``ab``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from harness.files import write_atomic, write_json_atomic


def fresh_fallback(exc: Exception, *, settings: dict, root: Path, dec: str, repeats: int, out: Callable[[str], None], **ab_args) -> int:
    """A and B do not fit on the device at once: fresh-process runs, one at a time (``ab``), judged at the fresh-run thresholds.
    The interleave report (``report.json``, ``report.md``) points to them and carries their runtime verdict."""
    from harness.commands.ab import ab

    fresh = root / "fresh"
    out(f"A and B do not fit on the device at once ({exc}); falling back to fresh-process runs, one at a time: {repeats} per side in "
        f"{fresh}, judged as `python -m harness ab` does (the fresh-run thresholds: far coarser than an interleaved comparison)")
    code = ab(decompositions=[dec], repeats=repeats, results_dir=fresh, out=out, **ab_args)
    case = f"{settings['workload']}-{dec}"
    got = json.loads((fresh / "report.json").read_text()) if (fresh / "report.json").exists() else {}
    v = next((x for x in got.get("verdicts", []) if x.get("kind") == "runtime" and x.get("case") == case), None)
    verdict = ({"outcome": v["outcome"], "message": f"{v['message']} (fresh-process runs: A and B did not fit on the device at once)"}
               if v else {"outcome": "inconclusive", "message": f"no runtime verdict from the fresh-process runs (exit code {code})"})
    report = {"settings": settings, "fallback": {"reason": str(exc), "results_dir": str(fresh), "repeats": repeats, "exit_code": code},
              "verdict": verdict}
    write_json_atomic(root / "report.json", report)
    write_atomic(root / "report.md", f"# interleave {case}: fresh-process fallback\n\n{exc}\n\n**{verdict['message']}**\n\n"
                 f"The runs and their full report: `{fresh}`.\n")
    return code


