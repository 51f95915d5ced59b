"""Real virtualenvs of this test run's base interpreter, as tox makes ``.tox/pinned`` and ``.tox/latest``: each its own
prefix, the one binary underneath, and this run's packages (the project included) seen through a ``.pth`` file."""

import site
import subprocess
import sys
from pathlib import Path


def make_venv(path: Path) -> str:
    """A virtualenv at ``path`` that imports what this interpreter imports; returns its ``bin/python``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    purelib = subprocess.run(
        [str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    # a line that starts with "import" is run, and addsitedir processes the .pth files there (the editable install's)
    dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    Path(purelib, "outer.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
    return str(path / "bin" / "python")
