"""The workload files of a folder (``workloads/``), each loaded on its own: a file that does not load is kept with its
one line and the name it declares, so that it costs its own workload only (:class:`Loaded`); one workload by name
(:func:`load_workload`), whatever the other files hold; and the project those folders belong to
(:func:`project_root`), where the command line's and the library's relative defaults live.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness import knobs
from harness.spec import Workload
from harness.spec_fields import SpecError
from harness.spec_sections import _check

ROOT_ENV = knobs.ROOT.name


def project_root() -> Path:
    """The project of the relative defaults: ``$HARNESS_ROOT`` if set; else the current directory if it holds
    workloads/ (a project laid out like this one); else the checkout this package runs from (the directory above
    ``harness/`` that holds pyproject.toml and workloads/); else the current directory."""
    if knobs.ROOT.get():
        return Path(knobs.ROOT.get()).expanduser().resolve()
    here = Path.cwd()
    if (here / "workloads").is_dir():
        return here
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file() and (checkout / "workloads").is_dir():
        return checkout
    return here


def in_project(path: str | Path | None, default: str) -> Path:
    """A path the library was given (``path``, relative to the current directory as typed), or where none was,
    ``default`` under :func:`project_root`."""
    return project_root() / default if path is None else Path(path)


@dataclass(frozen=True)
class Loaded:
    """The workload files of a folder: those that load, by name, with their files; the one line of each that does
    not, and the name each of those declares (:func:`declared_name`)."""

    workloads: dict[str, Workload]
    files: dict[str, Path]
    broken: dict[Path, str]
    declared: dict[Path, str] = dataclasses.field(default_factory=dict)  # broken file -> the name it declares

    def broken_file(self, name: str) -> Path | None:
        """The file that does not load and is ``name``'s: it declares that name, or is ``NAME.toml``; None if none."""
        return next((p for p, n in self.declared.items() if n == name), None) or next(
            (p for p in self.broken if p.stem == name), None
        )

    def unknown(self, names: tuple[str, ...]) -> list[str]:
        """The ``names`` that no file here declares, whether it loads or not."""
        return [n for n in names if n not in self.workloads and self.broken_file(n) is None]

    def unknown_line(self, unknown: list[str], head: str) -> str:
        """``head`` (what named the ``unknown`` names), then the known names and the first file that does not
        load."""
        others = (
            f"; {len(self.broken)} file(s) do not load, first: {next(iter(self.broken.values()))}"
            if self.broken
            else ""
        )
        return f"{head}; known: {', '.join(self.workloads) or '(none)'}{others}"

    def pick(self, names: tuple[str, ...], unknown_head) -> dict[str, Workload]:
        """The workloads ``names``, whatever the other files hold. A name that is not here raises SpecError: the line of
        its own file where that does not load (:meth:`broken_file`), else ``unknown_head(names not here)``, the known
        names and the first file that does not load."""
        for name in names:
            if name not in self.workloads and (path := self.broken_file(name)) is not None:
                raise SpecError(self.broken[path])
        unknown = self.unknown(names)
        _check(not unknown, self.unknown_line(unknown, unknown_head(unknown)))
        return {n: self.workloads[n] for n in names}


def declared_name(path: Path) -> str:
    """The name a workload file that does not load declares (its ``name`` key, where the TOML parses and gives a
    string), else its stem: a broken file is still named, so that a session or a plan that asks for it by name gets its
    one line instead of an unknown name."""
    try:
        name = tomllib.loads(path.read_text()).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):  # the reader recurses per level
        return path.stem
    return name if isinstance(name, str) and name else path.stem


def load_each(directory: str | Path) -> Loaded:
    """Every ``*.toml`` in ``directory``, each on its own: a bad file is kept as its error line in ``broken`` and the
    others load. Files that declare one name are all broken, each line naming every one of them: which of them a
    ``--workload`` means is not for the order of file names to settle."""
    loaded: dict[str, list[tuple[Path, Workload]]] = {}
    broken: dict[Path, str] = {}
    for path in sorted(Path(directory).glob("*.toml")):
        try:
            w = Workload.load(path)
        except SpecError as exc:
            broken[path] = str(exc)
            continue
        loaded.setdefault(w.name, []).append((path, w))
    found: dict[str, Workload] = {}
    files: dict[str, Path] = {}
    for name, each in loaded.items():
        if len(each) == 1:
            ((files[name], found[name]),) = each
            continue
        paths = [str(p) for p, _ in each]
        for path, _ in each:
            broken[path] = (
                f"{path}: workload name {name!r} is declared by {len(paths)} files ({', '.join(paths)}); "
                "rename all but one, each file a name of its own"
            )
    broken = dict(sorted(broken.items()))
    declared = {p: declared_name(p) for p in broken}
    return Loaded(found, files, broken, {p: n for p, n in declared.items() if n not in found})


def load_workloads(directory: str | Path) -> dict[str, Workload]:
    """Every ``*.toml`` in ``directory``, by name. Raises SpecError on the first bad file or a repeated name."""
    loaded = load_each(directory)
    for line in loaded.broken.values():
        raise SpecError(line)
    return loaded.workloads


def load_workload(directory: str | Path, name: str, steps: int | None = None) -> Workload:
    """The workload ``name`` from ``directory``, with ``--steps`` applied; another file's mistake does not stop it.
    Raises SpecError with the line of ``name``'s own file when that does not load, else naming the known ones (or the
    folder, where there is none)."""
    _check(
        Path(directory).is_dir(),
        f"no workload {name!r}: there is no workloads folder {directory}; pass the folder that holds {name}.toml",
    )
    w = load_each(directory).pick((name,), lambda unknown: f"no workload {name!r} in {directory}")[name]
    return w.with_overrides(max_steps=steps)
