"""The Python environment of one side of a comparison: which interpreter, and what it would import.

Two virtualenvs made from one base interpreter (tox's ``.tox/pinned`` and ``.tox/latest``) run the same binary, so
the binary says nothing about the environment. An environment is its prefix (``sys.prefix``: where its site-packages
are) and the distributions it sees; two interpreters are one environment only when both are the same.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from harness.errors import BadInput

# Run by the interpreter being asked, so that it reports what it would import, PYTHONPATH included.
_PROBE = (
    "import importlib.metadata as m, json, os, sys\n"
    "dists = {(d.metadata['Name'] or '').lower(): d.version for d in m.distributions()}\n"
    "print(json.dumps({'prefix': os.path.realpath(sys.prefix), 'distributions': sorted(dists.items())}))"
)


def interpreter(path: str | None, side: str, flag: str | None = None) -> str:
    """The Python of one side: a path or a command on PATH (default: this interpreter). Raises ValueError with one
    line, naming ``flag`` (default ``--python-<side>``), if it is no executable file."""
    if not path:
        return sys.executable
    if os.sep in path:
        found = path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    else:
        found = shutil.which(path)
    if not found:
        raise BadInput(
            f"{flag or '--python-' + side} {path}: not an executable Python; pass e.g. .tox/latest/bin/python"
        )
    return found


@dataclass(frozen=True)
class Environment:
    """What an interpreter runs with: its prefix and the (name, version) of every distribution it sees."""

    python: str
    prefix: str
    distributions: tuple[tuple[str, str], ...]

    def same_as(self, other: Environment) -> bool:
        """One environment: the same prefix and the same distributions (never judged by the binary)."""
        return (self.prefix, self.distributions) == (other.prefix, other.distributions)


def environment(python: str, side: str) -> Environment:
    """The environment ``python`` runs with. Raises ValueError with one line if the interpreter cannot say."""
    try:
        proc = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BadInput(f"--python-{side} {python}: cannot start it ({exc})") from None
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BadInput(f"--python-{side} {python}: cannot list its environment ({last})")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return Environment(python, data["prefix"], tuple((name, version) for name, version in data["distributions"]))


def side_versions(python: str, side: str) -> dict[str, str | None]:
    """Python and library versions (``harness.measuring.env.versions``) as the interpreter of one side sees them.
    Raises ValueError with one line if it cannot say (its workers would fail the same way)."""
    code = "import json; from harness.measuring.env import versions; print(json.dumps(versions()))"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BadInput(
            f"--python-{side} {python}: cannot report its versions ({last}); "
            "install this project into that environment (tox does)"
        )
    return json.loads(
        proc.stdout.strip().splitlines()[-1]
    )  # the last line: anything a library prints on import comes before


def shared(va: dict, vb: dict) -> str | None:
    """``va`` as one line when it equals ``vb``; None when they differ."""
    return ", ".join(f"{k} {v}" for k, v in va.items() if v) if va == vb else None


def same_versions(a: str, b: str) -> str | None:
    """The versions both sides share, as one line, when A and B have identical versions; None when they differ."""
    return shared(side_versions(a, "a"), side_versions(b, "b"))
