"""Load the JSON case tables of tests/unit/rewards/cases/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).parent / "cases"


def load_table(name: str) -> dict[str, Any]:
    return json.loads((CASES_DIR / f"{name}.json").read_text())


def params(name: str, section: str = "cases") -> list[Any]:
    """pytest.param per row of a table section, with the row's name as its id when it has one."""
    import pytest

    rows = load_table(name)[section]
    return [pytest.param(row, id=row.get("name", f"{section}-{i}")) for i, row in enumerate(rows)]
