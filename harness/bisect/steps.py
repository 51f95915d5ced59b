"""One step of a bisection: a candidate's census run, or an interleaved comparison of a candidate against good.

A census run is ``python -m harness census`` of the case under the candidate's interpreter, made in its own folder
``<results-dir>/census/<name>/``; its counts are exact, so a census already in that folder (same workload hash,
decomposition and device) is reused and costs nothing: a rerun into the same results dir resumes. A comparison is
``python -m harness interleave`` with good as A and the candidate as B, within the step budget, in
``<results-dir>/interleave/<n>-<name>/``; its outcome (regression, pass, improvement, inconclusive) is kept as it is.

Every step is logged with its wall time on the device (the machine is held for the whole run) and whether it was
reused; installs are timed apart (host only). With a budget (``budget_minutes``), a step that would end past it is not
started: its candidate counts as dead ("budget spent"), so the search narrows to the range around it as around one
that cannot be installed. A step is expected to take as long as the longest of its kind so far; installs count too.
``census_fn`` and ``compare_fn`` replace the real runs in tests.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import files
from harness.bisect.config import BisectConfig
from harness.bisect.envs import EnvCache
from harness.bisect.plan import FAILED, OK, Candidate, Measured
from harness.files import mark_not_stored, read_jsonl
from harness.judging.census_diff import normalize, with_memory
from harness.results.bisection import DEVICE_STEPS, Spent, Step
from harness.results.verdict import Verdict

CensusFn = Callable[[str, Path], dict | None]  # (python, folder) -> the census run's record, or None
# (python A, python B, folder) -> the comparison's verdict, or None
CompareFn = Callable[[str, str, Path], Verdict | None]


@dataclass(frozen=True)
class CensusProbe:
    """A candidate's census as a step measured it: the normalised ``census`` (its peaks of memory in it), the census
    run's median step (``step_ms``, None where it has none) and the interpreter it ran under."""

    census: dict
    step_ms: float | None
    python: str


def slug(text: str, width: int = 40) -> str:
    """A candidate's label as a folder name: at most ``width`` characters."""
    return files.slug(text, keep=".+-", strip="_", width=width, empty="base")


def census_folder(root: str | Path, label: str, python: str) -> Path:
    """Where a bisection into ``root`` keeps the census of the candidate ``label`` run by ``python``; the ``census``
    folder above it is marked as not stored (other environments than the session's)."""
    return mark_not_stored(Path(root) / "census") / f"{slug(label)}-{hashlib.sha256(python.encode()).hexdigest()[:8]}"


def hand_census(root: str | Path, python: str, record: dict) -> Path:
    """Keep ``record``, a census run made before the bisection, as the census of the end given as the interpreter
    ``python`` in a bisection into ``root``: the bisection takes it instead of measuring that end again. Returns its
    folder."""
    folder = census_folder(root, python, python)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runs.jsonl").write_text(json.dumps(record) + "\n")
    return folder


class Steps:
    """The measurements of one bisection (``cfg``) on the environments of ``envs``, logged in ``self.log``."""

    def __init__(
        self,
        cfg: BisectConfig,
        envs: EnvCache,
        *,
        census_fn: CensusFn | None = None,
        compare_fn: CompareFn | None = None,
        out: Callable[[str], None] = print,
    ):
        self.cfg, self.envs, self.out = cfg, envs, out
        self.census_fn = census_fn or self._census_run
        self.compare_fn = compare_fn or self._compare_run
        self.root = Path(cfg.results_dir)
        self.log: list[Step] = []
        self._censuses: dict[str, Measured] = {}
        self._by_candidate: dict[str, Measured] = {}
        self._compared: dict[tuple[str, str], Measured] = {}
        self._expected: tuple | None = None

    # ---- census ---------------------------------------------------------------------------------------
    def census(self, cand: Candidate) -> Measured:
        """The census of ``cand`` (``value``: a :class:`CensusProbe`), measured once per environment; past
        the budget, a candidate not measured yet is not even installed."""
        if cand.key() in self._by_candidate:
            return self._by_candidate[cand.key()]
        if not cand.python and (why := self._over_budget("census")):
            self._note("census", cand, 0.0, False, f"skipped: {why}")
            return Measured(FAILED, reason=why)
        env = self.envs.python_for(cand)
        if env.dead:
            self._note("install", cand, 0.0, False, f"uninstallable: {env.reason}")
            return env
        if env.value not in self._censuses:
            self._censuses[env.value] = self._census_of(cand, env.value)
        self._by_candidate[cand.key()] = self._censuses[env.value]
        return self._censuses[env.value]

    def _census_of(self, cand: Candidate, python: str) -> Measured:
        folder = census_folder(self.root, cand.label, python)
        rec = self._kept(folder)
        reused = rec is not None
        t0 = time.monotonic()
        if rec is None and (why := self._over_budget("census")):
            self._note("census", cand, 0.0, False, f"skipped: {why}", folder)
            return Measured(FAILED, reason=why)
        if rec is None:
            self.out(f"census of {cand.label}")
            rec = self.census_fn(python, folder)
        wall = 0.0 if reused else time.monotonic() - t0
        census = with_memory(
            normalize((rec or {}).get("census")), rec or {}
        )  # the record's peaks: every rank's, and older runs'
        if not rec or rec.get("status", "ok") != "ok" or not census or not census.get("fits"):
            why = (census or {}).get("reason") or f"the census run failed; its log: {(rec or {}).get('log') or folder}"
            self._note("census", cand, wall, reused, f"failed: {why}", folder)
            return Measured(FAILED, reason=why)
        self._note("census", cand, wall, reused, "ok", folder)
        return Measured(OK, CensusProbe(census, rec.get("step_time_median_ms"), python))

    def _kept(self, folder: Path) -> dict | None:
        """A census run already in ``folder`` for this case, or None."""
        path = folder / "runs.jsonl"
        if not path.is_file():
            return None
        if self._expected is None:
            from harness.spec_folder import load_workload

            w = load_workload(self.cfg.workloads_dir, self.cfg.workload, self.cfg.steps)
            self._expected = (w.hash, self.cfg.decomposition, self.cfg.gpu)
        for rec in reversed(read_jsonl(path)):
            if (
                (rec.get("workload_hash"), rec.get("decomposition_id"), rec.get("gpu")) == self._expected
                and rec.get("status") == "ok"
                and (rec.get("census") or {}).get("fits")
            ):
                return rec
        return None

    def _census_run(self, python: str, folder: Path) -> dict | None:
        from harness.suite.census import census

        made = census(
            gpu=self.cfg.gpu,
            workload=self.cfg.workload,
            decompositions=[self.cfg.decomposition],
            repeats=1,
            python=python,
            steps=self.cfg.steps,
            workloads_dir=self.cfg.workloads_dir,
            results_dir=folder,
            run_timeout=self.cfg.run_timeout,
            out=lambda s: self.out(f"    {s}"),
        )
        last = made.latest(self.cfg.decomposition)
        return last.to_json() if last is not None else None  # the bisection reads the record as written

    # ---- interleaved comparison -------------------------------------------------------------------------
    def compare(self, good: Candidate, cand: Candidate) -> Measured:
        """``cand`` against ``good``, interleaved within the step budget, once per pair of environments; ``value``: the
        outcome."""
        envs = [self.envs.python_for(c) for c in (good, cand)]
        if any(e.dead for e in envs):
            dead = next(e for e in envs if e.dead)
            self._note("install", cand if envs[1].dead else good, 0.0, False, f"uninstallable: {dead.reason}")
            return Measured(dead.status, reason=dead.reason)
        key = (envs[0].value, envs[1].value)
        if key not in self._compared:
            self._compared[key] = self._compare_of(good, cand, *key)
        return self._compared[key]

    def _compare_of(self, good: Candidate, cand: Candidate, python_a: str, python_b: str) -> Measured:
        n = sum(1 for s in self.log if s.kind == "interleave") + 1
        folder = self.root / "interleave" / f"{n:02d}-{slug(cand.label)}"
        if why := self._over_budget("interleave"):
            self._note("interleave", cand, 0.0, False, f"skipped: {why}", folder)
            return Measured(FAILED, reason=why)
        self.out(f"interleaved: {cand.label} against {good.label}")
        t0 = time.monotonic()
        verdict = self.compare_fn(python_a, python_b, folder)
        wall = time.monotonic() - t0
        if verdict is None:
            self._note("interleave", cand, wall, False, "failed: no verdict", folder)
            return Measured(FAILED, reason=f"the comparison gave no verdict; see {folder}")
        self._note("interleave", cand, wall, False, verdict.outcome, folder, verdict)
        return Measured(OK, verdict.outcome)

    def _compare_run(self, python_a: str, python_b: str, folder: Path) -> Verdict | None:
        from harness.sidebyside.run import interleave

        made = interleave(self.cfg.comparison(python_a, python_b, str(folder)), out=lambda s: self.out(f"    {s}"))
        return made.verdict

    def _over_budget(self, kind: str) -> str | None:
        """Why a step of ``kind`` may not start (it would end past the budget), or None."""
        if self.cfg.budget_minutes is None:
            return None
        used = (
            sum(s.wall_s for s in self.log if s.kind in DEVICE_STEPS) + self.envs.install_s
        )  # installs hold the device too
        typical = max((s.wall_s for s in self.log if s.kind == kind), default=0.0)
        if kind == "interleave":
            typical = max(typical, 60.0 * self.cfg.step_budget_minutes)
        if used + typical <= 60.0 * self.cfg.budget_minutes:
            return None
        return (
            f"budget spent ({used / 60:.1f} of {self.cfg.budget_minutes:g} device minutes used; "
            f"a step takes about {typical / 60:.1f})"
        )

    def _note(
        self,
        kind: str,
        cand: Candidate,
        wall: float,
        reused: bool,
        outcome: str,
        folder: Path | None = None,
        verdict: Verdict | None = None,
    ) -> None:
        self.log.append(
            Step(kind, cand.label, round(wall, 3), reused, outcome, str(folder) if folder else None, verdict)
        )

    def spent(self) -> Spent:
        """Device seconds by kind of step (reused censuses cost none), and the host seconds of installs."""
        return Spent.of(self.log, self.envs.install_s, self.envs.built)
