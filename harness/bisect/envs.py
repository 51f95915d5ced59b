"""One environment per candidate, built once and cached: the base environment with the candidate's packages on it.

An environment is a venv whose site-packages holds only the candidate's packages (installed by pip from an index, a
wheel directory, or a commit of a checkout exported with ``git archive`` and installed by path) and a ``.pth`` file
that adds the base environment's site directories after its own (``site.addsitedir``, so the base's own ``.pth`` files,
editable installs among them, work as they do there). A venv made by a venv's Python with ``--system-site-packages``
would see the base *interpreter's* site-packages instead of the base environment's, hence the ``.pth`` file.

pip installs each candidate with the base environment's versions as constraints: a release that needs another version
of a package the base has cannot be installed beside the others, and is recorded as uninstallable with pip's reason
(with ``move_deps``, pip may install such a dependency at the version the release needs, into the candidate's venv).

The cache is a folder of environments named by a hash of the base environment (its interpreter and every
distribution's version), the candidate's installs and where they come from; delete it to rebuild them. Only an
environment whose ``ready.json`` was written is reused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from harness.bisect.config import canonical
from harness.bisect.plan import OK, UNINSTALLABLE, Candidate, Install, Measured
from harness.errors import BadInput
from harness.files import cache_dir

_DESCRIBE = r"""
import importlib.metadata as md, json, re, site, sys
dists = {}
for d in md.distributions():
    name = d.metadata["Name"] if d.metadata else None
    if name:
        dists.setdefault(re.sub(r"[-_.]+", "-", name).lower(), d.version)
print(json.dumps({"executable": sys.executable, "version": "%d.%d" % sys.version_info[:2],
                  "site": site.getsitepackages() if hasattr(site, "getsitepackages") else [], "dists": dists}))
"""
PIP_TIMEOUT_S = 1800


def describe(python: str) -> dict:
    """The interpreter ``python`` as the bisect needs it: ``version`` (X.Y), ``site`` (its site directories) and
    ``dists`` (canonical name -> version). Raises ValueError (one line) when it cannot run."""
    proc = subprocess.run([python, "-c", _DESCRIBE], capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise BadInput(f"{python}: cannot list its packages ({last_line(proc.stderr)}); pass a working interpreter")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def last_line(text: str, width: int = 300) -> str:
    """pip's reason, shortened: what a dependency conflict is caused by, else its last ``ERROR:`` line, else the last
    line."""
    raw = (text or "").splitlines()
    if "The conflict is caused by:" in raw:
        cause = raw[raw.index("The conflict is caused by:") + 1 :]
        line = "conflict: " + "; ".join(
            ln.strip() for ln in cause[: next((i for i, ln in enumerate(cause) if not ln.strip()), len(cause))]
        )
    else:
        lines = [ln.strip() for ln in raw if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR:") and "ResolutionImpossible" not in ln]
        line = (errors or lines or ["no output"])[-1]
    return line if len(line) <= width else line[: width - 1] + "…"


def default_cache() -> Path:
    return cache_dir("harness-bisect")


class EnvCache:
    """Environments on the base interpreter ``base_python``, in ``root``. ``wheels``: a wheel directory to install
    from (pip's ``--no-index --find-links``); ``index_url``: another index; ``no_index``: nothing from an index;
    ``move_deps``: no constraints, a candidate's dependencies may move away from the base's versions."""

    def __init__(
        self,
        root: str | Path,
        base_python: str,
        *,
        wheels: str | None = None,
        index_url: str | None = None,
        no_index: bool = False,
        move_deps: bool = False,
        out=print,
    ):
        self.root, self.base_python, self.wheels, self.index_url = Path(root), base_python, wheels, index_url
        self.no_index, self.move_deps = no_index or wheels is not None, move_deps
        self.out, self.install_s, self.built, self._base, self._known = out, 0.0, 0, None, {}

    @property
    def base(self) -> dict:
        if self._base is None:
            self._base = describe(self.base_python)
        return self._base

    def needed(self, cand: Candidate) -> tuple[Install, ...]:
        """The installs of ``cand`` the base environment does not already have."""
        dists = self.base["dists"]
        return tuple(
            i for i in cand.installs if not (i.kind == "release" and dists.get(canonical(i.package)) == i.version)
        )

    def key(self, installs: tuple[Install, ...]) -> str:
        blob = json.dumps(
            {
                "base": os.path.realpath(self.base_python),
                "dists": sorted(self.base["dists"].items()),
                "installs": sorted((canonical(i.package), i.version, i.kind, i.source) for i in installs),
                "from": [self.wheels and os.path.realpath(self.wheels), self.index_url, self.no_index, self.move_deps],
            }
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def python_for(self, cand: Candidate) -> Measured:
        """The interpreter of ``cand`` (``value``), built when not cached; ``uninstallable`` with pip's reason."""
        if cand.python:
            return Measured(OK, cand.python)
        installs = self.needed(cand)
        if not installs:
            return Measured(OK, self.base_python)
        key = self.key(installs)
        if key not in self._known:
            t0 = time.monotonic()
            self._known[key] = self._build(key, installs, cand.label)
            self.install_s += time.monotonic() - t0
        return self._known[key]

    def _build(self, key: str, installs: tuple[Install, ...], label: str) -> Measured:
        home = self.root / key
        python = home / "env" / "bin" / "python"
        if (home / "ready.json").is_file() and python.exists():
            return Measured(OK, str(python))
        shutil.rmtree(home, ignore_errors=True)  # a build that did not finish
        home.mkdir(parents=True)
        self.out(f"  building the environment of {label} in {home}")
        venv = subprocess.run(
            [self.base_python, "-m", "venv", "--without-pip", str(home / "env")], capture_output=True, text=True
        )
        if venv.returncode:
            raise BadInput(
                f"cannot make a venv with {self.base_python} ({last_line(venv.stderr)}); install the venv module"
            )
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        lines = [f"import site; site.addsitedir({d!r})" for d in self.base["site"]]
        Path(purelib, "_harness_bisect_base.pth").write_text("\n".join(lines) + "\n")
        try:
            targets = [self._target(i, home) for i in installs]
        except ValueError as exc:
            return Measured(UNINSTALLABLE, reason=str(exc))
        constraints = home / "constraints.txt"
        skip = {canonical(i.package) for i in installs}
        constraints.write_text(
            ""
            if self.move_deps
            else "".join(f"{n}=={v}\n" for n, v in sorted(self.base["dists"].items()) if n not in skip)
        )
        proc = subprocess.run(
            self._pip(python, constraints, any(i.kind == "commit" for i in installs)) + targets,
            capture_output=True,
            text=True,
            timeout=PIP_TIMEOUT_S,
        )
        (home / "pip.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode:
            return Measured(UNINSTALLABLE, reason=last_line(proc.stdout + "\n" + proc.stderr))
        (home / "ready.json").write_text(json.dumps({"installs": [vars(i) for i in installs], "python": str(python)}))
        self.built += 1
        return Measured(OK, str(python))

    def _pip(self, python: Path, constraints: Path, from_source: bool) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "-c",
            str(constraints),
        ]
        if self.no_index:
            cmd += ["--no-index"] + (
                ["--no-build-isolation"] if from_source else []
            )  # offline: build with the base's tools
        if self.wheels:
            cmd += ["--find-links", str(self.wheels)]
        if self.index_url:
            cmd += ["--index-url", self.index_url]
        return cmd

    def _target(self, i: Install, home: Path) -> str:
        if i.kind == "release":
            return f"{i.package}=={i.version}"
        if i.kind == "wheel":
            return i.source
        src = home / "src"
        export(i.source, i.version, src)
        return str(src)


# ---- releases and commits ----------------------------------------------------------------------------
def wheel_releases(wheels: str | Path, package: str) -> list[str]:
    """The versions of ``package`` among the wheels and sdists of a folder."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    out = set()
    for f in Path(wheels).iterdir():
        try:
            name, version = (
                parse_wheel_filename(f.name)[:2] if f.name.endswith(".whl") else parse_sdist_filename(f.name)
            )
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if canonical(name) == canonical(package):
            out.add(str(version))
    return sorted(out)


def index_releases(package: str, python: str, index_url: str | None = None) -> list[str]:
    """The versions of ``package`` on the index that ``python`` can install (``pip index versions``)."""
    cmd = [sys.executable, "-m", "pip", "--python", python, "index", "versions", package, "--disable-pip-version-check"]
    proc = subprocess.run(
        cmd + (["--index-url", index_url] if index_url else []), capture_output=True, text=True, timeout=600
    )
    found = re.search(r"Available versions:\s*(.+)", proc.stdout)
    if proc.returncode or not found:
        raise BadInput(
            f"cannot list the releases of {package} ({last_line(proc.stderr or proc.stdout)}); "
            "offline, pass --wheels DIR"
        )
    return [v.strip() for v in found.group(1).split(",") if v.strip()]


def _git(repo: str | Path, *args: str, binary: bool = False):
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary, timeout=600)
    if proc.returncode:
        err = proc.stderr.decode(errors="replace") if binary else proc.stderr
        raise BadInput(f"git {' '.join(args[:2])} in {repo}: {last_line(err)}")
    return proc.stdout


def commits(repo: str | Path, good: str, bad: str) -> list[str]:
    """The commits from ``good`` to ``bad`` (full hashes, both included), along the first parents of ``bad``."""
    g, b = (_git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}").strip() for rev in (good, bad))
    if subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", g, b]).returncode:
        raise BadInput(f"--good {good} is not an ancestor of --bad {bad} in {repo}: pass the older commit as --good")
    return [g] + _git(repo, "rev-list", "--first-parent", "--reverse", f"{g}..{b}").split()


def export(repo: str | Path, commit: str, dest: Path) -> None:
    """The tree of ``commit`` in the folder ``dest`` (``git archive``; the checkout itself is left as it is)."""
    data = _git(repo, "archive", "--format=tar", commit, binary=True)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:  # a Python without extraction filters (before 3.11.4): git's own archive, trusted
            tar.extractall(dest)


def package_name(repo: str | Path, commit: str) -> str:
    """The distribution name of a checkout at ``commit``: ``[project] name`` of pyproject.toml, else ``name=`` in
    setup.py, else the folder's name."""
    import tomllib

    try:
        name = tomllib.loads(_git(repo, "show", f"{commit}:pyproject.toml")).get("project", {}).get("name")
        if name:
            return name
    except (ValueError, tomllib.TOMLDecodeError):
        pass
    try:
        found = re.search(r"""\bname\s*=\s*["']([A-Za-z0-9._-]+)["']""", _git(repo, "show", f"{commit}:setup.py"))
        if found:
            return found.group(1)
    except ValueError:
        pass
    return Path(repo).resolve().name
