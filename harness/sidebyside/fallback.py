"""When the two sides of a comparison do not fit on the device at once: fresh-process runs, one at a time (``ab``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.files import refuse_links, write_atomic, write_json_atomic
from harness.judging.comparison_settings import ComparisonSettings
from harness.results.comparison import ComparisonResult


def fresh_fallback(
    exc: Exception,
    *,
    settings: ComparisonSettings,
    root: Path,
    dec: str,
    repeats: int,
    out: Callable[[str], None],
    **ab_args,
) -> ComparisonResult:
    """A and B do not fit on the device at once: fresh-process runs, one at a time (``ab``), judged at the fresh-run
    thresholds. The interleave report (``report.json``, ``report.md``) points to them and carries their runtime
    verdict."""
    from harness.suite.ab import ab

    fresh = root / "fresh"
    out(
        f"A and B do not fit on the device at once ({exc}); falling back to fresh-process runs, one at a time: "
        f"{repeats} per side in {fresh}, judged as `python -m harness ab` does "
        "(the fresh-run thresholds: far coarser than an interleaved comparison)"
    )
    got = ab(decompositions=[dec], repeats=repeats, results_dir=fresh, out=out, **ab_args)
    code = got.exit_code
    case = f"{settings.workload}-{dec}"
    v = got.verdict_of("runtime", case)
    verdict = (
        {
            "outcome": v.outcome,
            "message": f"{v.message} (fresh-process runs: A and B did not fit on the device at once)",
        }
        if v
        else {
            "outcome": "inconclusive",
            "message": f"no runtime verdict from the fresh-process runs (exit code {code})",
        }
    )
    report = {
        "settings": settings.to_json(),
        "fallback": {"reason": str(exc), "results_dir": str(fresh), "repeats": repeats, "exit_code": code},
        "verdict": verdict,
    }
    result = ComparisonResult.from_json(report, root, code)
    refuse_links(root / "report.json", root / "report.md")  # both checked before either is written
    write_json_atomic(root / "report.json", result.to_json())
    write_atomic(
        root / "report.md",
        f"# interleave {case}: fresh-process fallback\n\n{exc}\n\n**{verdict['message']}**\n\n"
        f"The runs and their full report: `{fresh}`.\n",
    )
    return result
