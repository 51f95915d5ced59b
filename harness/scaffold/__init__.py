"""``init``: lay out a team's repository for the suite, as ``asv quickstart`` does for asv.

The layout is this project's, where it applies to a team: ``perftests/`` (the cases, imported from the installed
harness), ``workloads/`` (one workload of theirs to start from), ``baselines/``, ``nightly.toml``, ``tox.ini`` with
``constraints/pinned.txt``, and ``.github/workflows/`` callers of this project's reusable workflows at one version of
the harness. The templates are package data (``files/``); :func:`plan` is pure, :func:`lay_out` writes what is missing
and keeps every file that exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from harness.errors import BadInput

FILES = Path(__file__).with_name("files")
DISTRIBUTION = "lora-perf-harness"
REPOSITORY = "lora-perf-harness/lora-perf-harness"  # where the reusable workflows live, without a Repository URL
NAME = re.compile(r"[a-z0-9][a-z0-9.\-]{0,63}")
REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,38}/[A-Za-z0-9._-]{1,100}")
REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
RENAMED = {"gitignore": ".gitignore", "workloads/WORKLOAD.toml": "workloads/{workload}.toml"}


def version() -> str:
    """The installed harness's version ("0.0.0" where it runs from a checkout that was never installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0.0.0"


def repository() -> str:
    """The harness's GitHub repository (owner/name), from the distribution's ``Repository`` URL."""
    try:
        urls = metadata.metadata(DISTRIBUTION).get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        found = re.match(r"\s*https://github\.com/([^/\s]+/[^/\s]+?)(?:\.git)?/?$", url)
        if label.strip().lower() == "repository" and found:
            return found[1]
    return REPOSITORY


def default_workload(root: Path) -> str:
    """A workload name from the repository's folder name, or ``my-workload`` where it makes none."""
    name = re.sub(r"[^a-z0-9.\-]+", "-", root.resolve().name.lower()).strip("-.")[:50]
    return f"{name}-lora" if NAME.fullmatch(name or "-") else "my-workload"


@dataclass(frozen=True)
class Layout:
    """What ``init`` lays out: where, the first workload's name and the harness the workflows call (``repo@ref``)."""

    root: Path
    workload: str
    uses: str  # OWNER/REPO@REF of the reusable workflows and the scripts they run

    def __post_init__(self):
        if not NAME.fullmatch(self.workload):
            raise BadInput(
                f"--workload {self.workload!r}: a workload name is 1 to 64 lowercase letters, digits, '.' and '-', "
                "starting with a letter or digit"
            )
        repo, _, ref = self.uses.partition("@")
        if not REPO.fullmatch(repo) or not REF.fullmatch(ref) or ".." in ref:
            raise BadInput(
                f"--harness {self.uses!r}: give the harness's GitHub repository and a tag or commit, OWNER/REPO@REF "
                f"(e.g. {REPOSITORY}@v{version()})"
            )
        if self.root.exists() and not self.root.is_dir():
            raise BadInput(f"{self.root}: not a directory; give the repository's folder")

    @classmethod
    def default(cls, root: str | Path = ".", workload: str | None = None, uses: str | None = None) -> Layout:
        root = Path(root)
        return cls(root, workload or default_workload(root), uses or f"{repository()}@v{version()}")


def plan(layout: Layout) -> list[tuple[str, str]]:
    """Every file of the layout: (its path under the root, its text). Pure: reads the templates only."""
    repo, _, ref = layout.uses.partition("@")
    values = {"@WORKLOAD@": layout.workload, "@REPOSITORY@": repo, "@REF@": ref}
    out = []
    for src in sorted(p for p in FILES.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = src.relative_to(FILES).as_posix()
        text = src.read_text()
        for key, value in values.items():
            text = text.replace(key, value)
        out.append((RENAMED.get(rel, rel).format(workload=layout.workload), text))
    return out


@dataclass(frozen=True)
class Laid:
    """What :func:`lay_out` did: the files it wrote and those it kept as they were."""

    root: Path
    written: tuple[str, ...]
    kept: tuple[str, ...]


def lay_out(layout: Layout) -> Laid:
    """Write every file of :func:`plan` that does not exist yet; an existing one is kept, never changed."""
    written, kept = [], []
    for rel, text in plan(layout):
        path = layout.root / rel
        if path.exists() or path.is_symlink():
            kept.append(rel)
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as exc:
            raise BadInput(
                f"{path}: cannot be written ({exc.strerror or exc}); give a folder you can write to"
            ) from None
        written.append(rel)
    return Laid(layout.root, tuple(written), tuple(kept))
