"""A throwaway PostgreSQL cluster for the integration tests: initdb into a temporary folder,
a server on 127.0.0.1 and a free port with password authentication, stopped at the end.

Postgres refuses to run as root; as root (CI containers) its programs run as the `postgres`
user that the OS package creates, and the folder is handed to that user.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SERVER_PROGRAMS = ("initdb", "pg_ctl")


def postgres_bin_dir() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, else the newest /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                        key=lambda path: int(Path(path).parent.name))
    for candidate in reversed(candidates):
        if all((Path(candidate) / name).exists() for name in SERVER_PROGRAMS):
            return Path(candidate)
    return None


def why_postgres_cannot_run() -> str | None:
    """None when a cluster can be started here; else the reason, for a pytest skip."""
    if postgres_bin_dir() is None:
        return ("PostgreSQL server programs (initdb, pg_ctl) are not installed; on Debian or "
                "Ubuntu: apt-get install -y postgresql")
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root and `runuser` (util-linux) is missing"
    return None


@dataclass
class PostgresCluster:
    """One cluster under `root`, serving 127.0.0.1:`port`, user `breadth`."""

    root: Path
    port: int
    user: str = "breadth"
    password: str = ""

    def __post_init__(self) -> None:
        self.password = self.password or secrets.token_urlsafe(18)
        bin_dir = postgres_bin_dir()
        assert bin_dir is not None, why_postgres_cannot_run()
        self.bin_dir = bin_dir

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin_dir / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}"

    def start(self) -> PostgresCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        password_file = self.root / "password"
        password_file.write_text(self.password)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(password_file, "postgres")
        self._run("initdb", "-D", str(self.data_dir), "-U", self.user, "-A", "scram-sha-256",
                  f"--pwfile={password_file}", "--no-sync")
        password_file.unlink()
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data_dir), "-l", str(self.root / "server.log"),
                  "-o", options, "-w", "-t", "60", "start")
        return self

    def create_database(self, name: str) -> None:
        self.query("postgres", f'CREATE DATABASE "{name}"')

    def query(self, database: str, sql: str) -> list[tuple]:
        """Rows of one statement, through asyncpg (Prefect's own Postgres driver)."""
        import asyncio

        import asyncpg

        async def fetch() -> list[tuple]:
            connection = await asyncpg.connect(host="127.0.0.1", port=self.port, user=self.user,
                                               password=self.password, database=database)
            try:
                return [tuple(record) for record in await connection.fetch(sql)]
            finally:
                await connection.close()

        return asyncio.run(fetch())

    def url(self, database: str, driver: str = "postgresql") -> str:
        return f"{driver}://{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop")
