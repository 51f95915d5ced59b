"""What a bisection searches over, from its two ends: the candidates good and bad, and one **axis** per package that
differs between them (its version swapped alone on good's environment, and its ladder of releases or commits).

* interpreters: the base is good's interpreter; every package at another version in bad's is an axis, its ladder
  the releases from good's version to bad's (from ``--wheels`` or the index); bad is bad's interpreter as it is;
* releases: good and bad are the pinned releases on the base (``--base-python``); each package pinned at another
  version is an axis, the other packages staying at good's pins;
* commits: one axis, the package of the checkout, its ladder the commits from good to bad along bad's first parents.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.bisect import envs as ev
from harness.bisect.config import BisectConfig, canonical
from harness.bisect.plan import Candidate, Install, differing, release_ladder
from harness.errors import BadInput


@dataclass
class Axis:
    """One package that moved: ``swap`` is good with this package at bad's version; ``ladder()`` lists the candidates
    from good's version (index 0) to bad's, computed when first asked (listing releases can ask the index)."""

    package: str
    good: str
    bad: str
    swap: Candidate
    make_ladder: Callable[[], list[Candidate]]
    _ladder: list[Candidate] | None = None

    def ladder(self) -> list[Candidate]:
        if self._ladder is None:
            self._ladder = self.make_ladder()
        return self._ladder


@dataclass
class Range:
    """``mode`` (``interpreters``, ``releases``, ``commits``), the ends, the axes, and the packages found in one end
    only (not bisected: there is nothing to swap)."""

    mode: str
    good: Candidate
    bad: Candidate
    axes: list[Axis]
    one_side: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # moved, but not among the packages asked for (``--packages``)


def base_python(cfg: BisectConfig) -> str:
    """The interpreter every candidate is built on: good's when the ends are interpreters, else ``--base-python`` or
    this one."""
    good, _ = cfg.ends()
    return good.text if good.kind == "python" else (cfg.python or sys.executable)


def releases_of(cfg: BisectConfig, envs: ev.EnvCache, package: str) -> list[str]:
    wheels = cfg.wheel_dir
    return ev.wheel_releases(wheels, package) if wheels else ev.index_releases(package, envs.base_python, cfg.index_url)


def resolve(cfg: BisectConfig, envs: ev.EnvCache) -> Range:
    """The range ``cfg`` names (module docstring). Raises ValueError (one line) when it cannot be laid out."""
    good, bad = cfg.ends()
    if good.kind == "commit":
        return _commits(cfg, good.text, bad.text)
    if good.kind == "python":
        gd, bd = envs.base["dists"], ev.describe(bad.text)["dists"]
        moved, one_side = differing(gd, bd)
        asked = {canonical(p) for p in cfg.packages}
        left_out = [f"{p} {a} -> {b}" for p, a, b in moved if asked and p not in asked]
        moved = [m for m in moved if not asked or m[0] in asked]
        return Range(
            "interpreters",
            Candidate(python=good.text),
            Candidate(python=bad.text),
            [_axis(cfg, envs, Candidate(), p, a, b) for p, a, b in moved],
            one_side,
            left_out,
        )
    gp = {canonical(n): v for n, v in good.pins}
    bp = {canonical(n): v for n, v in bad.pins}
    start = Candidate(tuple(Install(n, v) for n, v in sorted(gp.items())))
    end = Candidate(tuple(Install(n, v) for n, v in sorted(bp.items())))
    moved, _ = differing(gp, bp)
    for package, a, b in moved:  # a misspelt name or version is bad input, said before any environment is built
        _known(cfg, envs, package, [v for v in (a, b) if v])
    return Range("releases", start, end, [_axis(cfg, envs, start, p, a, b) for p, a, b in moved])


def _known(cfg: BisectConfig, envs: ev.EnvCache, package: str, versions: list[str]) -> None:
    """Raise ValueError (one line) when a version of ``package`` that an end names is not among its releases."""
    from packaging.version import InvalidVersion, Version

    listed = releases_of(cfg, envs, package)
    try:
        have = {Version(v) for v in listed}
        missing = [v for v in versions if Version(v) not in have]
    except InvalidVersion as exc:
        raise BadInput(f"release {exc}: not a version; name releases as name==1.2.3") from None
    if missing:
        where = f"the wheels in {cfg.wheel_dir}" if cfg.wheel_dir else "the package index"
        seen = f"its releases there end with {', '.join(listed[-4:])}" if listed else "no release of that name is there"
        raise BadInput(f"{package}=={missing[0]}: not a release in {where} ({seen}); check the name and the version")


def _axis(cfg: BisectConfig, envs: ev.EnvCache, start: Candidate, package: str, good: str, bad: str) -> Axis:
    def ladder() -> list[Candidate]:
        versions = release_ladder(releases_of(cfg, envs, package), good, bad)
        return [start.with_version(package, v) for v in versions]

    return Axis(package, good, bad, start.with_version(package, bad), ladder)


def _commits(cfg: BisectConfig, good: str, bad: str) -> Range:
    shas = ev.commits(cfg.checkout, good, bad)
    package = cfg.package or ev.package_name(cfg.checkout, shas[-1])
    ladder = [Candidate((Install(package, sha, "commit", str(cfg.checkout)),)) for sha in shas]
    return Range(
        "commits", ladder[0], ladder[-1], [Axis(package, shas[0], shas[-1], ladder[-1], lambda: ladder, ladder)]
    )
