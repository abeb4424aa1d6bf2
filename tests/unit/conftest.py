"""Fixtures the unit tests share."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def mlflow_db(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """A function that puts an empty MLflow sqlite database at a path (the parent must exist)
    and returns the path: every table made, no experiment yet, as MLflow's store leaves a new
    database just before it makes the Default experiment (whose artifact folder is the one of
    the store that opens the copy). MLflow makes the tables by running its 68 schema migrations,
    about 2 CPU s each time; a session runs them once and each store starts from a copy (0.07 s).
    `_initialize_tables` is MLflow's own first step on an empty database
    (SqlAlchemyStore.__init__): no public API makes the tables without the Default experiment."""
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    template = tmp_path_factory.mktemp("mlflow-schema") / "mlflow.db"
    engine = sqlalchemy.create_engine(f"sqlite:///{template}")
    try:
        _initialize_tables(engine)
    finally:
        engine.dispose()

    def empty_database(path: Path) -> Path:
        shutil.copyfile(template, path)
        return path

    return empty_database


@pytest.fixture(scope="session", autouse=True)
def _cli_command_built_once() -> Iterator[None]:
    """typer's CliRunner.invoke builds the click command from the Typer app at every call: it
    evaluates every command's annotations again (the CLI modules' are strings), 0.1-0.3 CPU s
    an invoke and about 2% of the in-process tier. An app's commands are fixed once imported,
    so each app is built once a session; each invoke still makes its own context."""
    import typer.testing

    built: dict[int, tuple[object, object]] = {}
    build = typer.testing._get_command

    def get_command(app):
        if id(app) not in built:  # the app is kept with its command: its id is not reused
            built[id(app)] = (app, build(app))
        return built[id(app)][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", get_command)
        yield
