"""scripts/results/findings.py: the README's "What the study found" table is what the script
prints from the committed tables, and `--readme` replaces that table alone."""

from __future__ import annotations

import pytest

from breadth.study.findings import FAMILIES, HEADER
from tests.unit.scripts.helpers import ROOT, load_script

findings = load_script("results/findings.py")


def test_the_readme_holds_the_table_the_committed_tables_give():
    table = findings.findings_markdown(findings.current_grids())
    assert table in (ROOT / "README.md").read_text(), (
        "README.md's findings table is out of date: run `PYTHONPATH=src .venv/bin/python "
        "scripts/results/findings.py --readme README.md`")
    # Every current grid is quoted, each with its family.
    assert all(f"**{name}** (`{grid_id}`" in table for name, grid_id, *_ in findings.CURRENT)


def test_readme_replaces_the_table_and_nothing_else(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nabove\n\n{HEADER}\n| old | row |\n\n{FAMILIES} old.\n\n## Next\n")
    assert findings.main(["--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("# x\n\nabove\n\n" + findings.findings_markdown(
        findings.current_grids())) and text.endswith("\n\n## Next\n")
    assert "| old | row |" not in text and f"{FAMILIES} old." not in text


def test_a_readme_without_one_table_is_refused_naming_what_it_needs(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")
    with pytest.raises(SystemExit):
        findings.main(["--readme", str(readme)])
    assert "--readme" in capsys.readouterr().err and readme.read_text() == "# x\n"
    with pytest.raises(ValueError, match="one findings table"):
        findings.with_table(f"{HEADER}\n{HEADER}\n{FAMILIES}\n", "t")
