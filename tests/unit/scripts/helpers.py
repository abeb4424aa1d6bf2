"""The scripts of scripts/ as modules, for their tests: a script is run by its path, not
installed, so a test loads it from its file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def load_script(path: str) -> ModuleType:
    """scripts/`path` (e.g. "tools/run_metrics.py") as a module named after its file, registered
    in sys.modules first: a dataclass of the script looks its module up there."""
    file = ROOT / "scripts" / path
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module
    spec.loader.exec_module(module)
    return module
