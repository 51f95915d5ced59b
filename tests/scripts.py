"""Load a script of .github/scripts or .ci as a module (their file names have dashes, so they cannot be imported)."""

import importlib.util
import sys
from pathlib import Path


def load_script(path: Path):
    name = path.stem.replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
