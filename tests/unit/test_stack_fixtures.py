"""The test stacks' migrated Prefect database (tests/conftest.py, `_prefect_db_from_template`):
the first start's database becomes the template, later stacks start from a copy of it, and a
database named in the environment (Postgres) is left alone. sqlite stands in for Prefect."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import PREFECT_DB, _prefect_db_from_template


def _start(home: Path, templates: Path | None, rows: int) -> None:
    """What a Prefect start does to its database here: make it when new, add `rows` rows."""
    with _prefect_db_from_template(home, templates):
        (home / "prefect").mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(home / "prefect" / PREFECT_DB) as db:
            db.execute("create table if not exists started (n integer)")
            db.executemany("insert into started values (?)", [(n,) for n in range(rows)])


def _rows(database: Path) -> int:
    with sqlite3.connect(database) as db:
        return db.execute("select count(*) from started").fetchone()[0]


def test_the_first_start_makes_the_template_and_later_ones_start_from_a_copy(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_DATABASE_CONNECTION_URL", raising=False)
    templates = tmp_path / "templates"
    templates.mkdir()
    _start(tmp_path / "first", templates, rows=2)
    assert _rows(templates / PREFECT_DB) == 2  # taken as the first start left it
    _start(tmp_path / "second", templates, rows=1)
    assert _rows(tmp_path / "second" / "prefect" / PREFECT_DB) == 3  # the copy, then its own
    assert _rows(templates / PREFECT_DB) == 2  # the template is never written to
    assert sorted(p.name for p in templates.iterdir() if p.name != ".lock") == [PREFECT_DB]


@pytest.mark.parametrize("database_url", ["postgresql+asyncpg://x/prefect", None])
def test_no_template_without_its_folder_or_with_a_database_in_the_environment(
    tmp_path, monkeypatch, database_url
):
    templates = tmp_path / "templates"
    templates.mkdir()
    if database_url:
        monkeypatch.setenv("PREFECT_API_DATABASE_CONNECTION_URL", database_url)
    else:
        monkeypatch.delenv("PREFECT_API_DATABASE_CONNECTION_URL", raising=False)
    _start(tmp_path / "home", templates if database_url else None, rows=1)
    assert not (templates / PREFECT_DB).exists()
