"""A real PostgreSQL server for the tests: a real ``postgres`` process on 127.0.0.1.

The test session starts the server it needs and stops it at the end, as
:mod:`redis_service` does for Redis:

* :func:`shared_postgres` -- one server for the session (tests keep apart by
  using tables of their own names);
* :func:`private_postgres` -- a server for one test, to kill and restart at will.

Finding the server: ``initdb`` and ``postgres`` on ``PATH``, or in Debian's
``/usr/lib/postgresql/<version>/bin`` (the newest version).  When they are
missing and the session runs as root on a system with ``apt-get``, Debian's
``postgresql`` package is installed first.  When they are still missing (or
``psycopg`` is not installed), a test that needs them *fails* with a clear
message if ``CI`` (or ``RANKENGINE_REQUIRE_POSTGRES``) is set, and is skipped
with the same message otherwise.

``initdb`` refuses to run as root, so a root session runs ``initdb`` and
``postgres`` as the ``postgres`` system user (created by the Debian package,
or here with ``useradd`` when missing) through ``runuser``; the data
directory is a temporary directory given to that user.  Trust
authentication, loopback only, a Unix socket in the data directory too.

Every server started here is stopped by its owner and, as a last resort, by
an ``atexit`` hook, so a session never leaves servers behind.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_service import free_port
from services import STARTED, apt_install, unavailable

#: Seconds to wait for a new server to accept connections.
START_TIMEOUT = 30.0
#: The system user a root session runs PostgreSQL as (initdb refuses root).
SERVICE_USER = "postgres"


def _unavailable(message: str) -> None:
    unavailable("PostgreSQL", "RANKENGINE_REQUIRE_POSTGRES", message)


def _find_bin() -> Path | None:
    """The directory holding ``initdb`` and ``postgres`` (newest Debian version first)."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(os.path.realpath(found)).parent

    def version(path: str) -> int:
        name = Path(path).parent.parent.name
        return int(name) if name.isdigit() else 0

    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    return Path(versions[-1]).parent if versions else None


def _try_install() -> None:
    apt_install("postgresql")


_BIN: list[Path] = []


def postgres_bin() -> Path:
    """The server's binary directory; install, fail or skip as documented."""
    if not _BIN:
        try:
            import psycopg  # noqa: F401 - the tests talk to the server through it
        except ImportError:
            _unavailable("psycopg is not installed (pip install -e '.[test]')")
        found = _find_bin()
        if found is None:
            _try_install()
            found = _find_bin()
        if found is None:
            _unavailable(
                "PostgreSQL's initdb/postgres not found (on PATH or in /usr/lib/postgresql) "
                "and could not be installed (install Debian's 'postgresql' package)"
            )
        assert found is not None
        _BIN.append(found)
    return _BIN[0]


def _as_service_user() -> list[str]:
    """The command prefix that runs a program as :data:`SERVICE_USER` (root only)."""
    if os.geteuid() != 0:
        return []
    if subprocess.run(["id", "-u", SERVICE_USER], capture_output=True, check=False).returncode:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ],
            capture_output=True,
            check=True,
        )
    return ["runuser", "-u", SERVICE_USER, "--"]


class PostgresProcess:
    """One ``postgres`` on 127.0.0.1 (and a Unix socket in its data directory).

    ``settings`` are ``-c name=value`` server settings (the tests turn
    ``fsync`` off for speed; the benchmark keeps it on).
    """

    def __init__(self, directory: Path, settings: dict[str, str] | None = None) -> None:
        self.directory = directory
        self.data = directory / "data"
        self.port = free_port()
        self.settings = {"fsync": "off", **(settings or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self._prefix = _as_service_user()
        self._initdb()

    @property
    def url(self) -> str:
        """A libpq connection string for the server's ``postgres`` database."""
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def _initdb(self) -> None:
        bindir = postgres_bin()
        self.directory.mkdir(parents=True, exist_ok=True)
        if self._prefix:
            shutil.chown(self.directory, SERVICE_USER)
        result = subprocess.run(
            [
                *self._prefix,
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{result.stdout}{result.stderr}")

    def start(self) -> None:
        """Start (or restart) the server and wait until it accepts connections."""
        for attempt in range(5):
            if self._start():
                return
            if attempt == 4:
                raise RuntimeError(f"postgres could not bind a free port:\n{self.log_tail()}")
            self.port = free_port()

    def log_tail(self) -> str:
        log = self.directory / "postgres.log"
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""

    def _start(self) -> bool:
        """False when the port was taken meanwhile (then try another)."""
        bindir = postgres_bin()
        command = [
            *self._prefix,
            str(bindir / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={self.directory}",
            "-c",
            "max_connections=100",
        ]
        for name, value in self.settings.items():
            command += ["-c", f"{name}={value}"]
        log = open(self.directory / "postgres.log", "ab")  # noqa: SIM115 - the child keeps it
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        STARTED.append(self.process)
        import psycopg

        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "Address already in use" in self.log_tail():
                    return False
                raise RuntimeError(f"postgres exited on start:\n{self.log_tail()}")
            try:
                with psycopg.connect(self.url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"postgres did not accept connections within {START_TIMEOUT} s")

    def kill(self) -> None:
        """SIGKILL the postmaster and its children: a crash (a power cut, as
        far as the server can tell); the next start runs crash recovery."""
        if self.process is not None and self.process.poll() is None:
            pid = _postmaster_pid(self.data)
            children = _children(pid) if pid is not None else []
            self._signal(signal.SIGKILL)
            for child in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            self.process.wait(timeout=10)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(_alive(c) for c in children):
                time.sleep(0.02)

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then SIGKILL after 10 s."""
        if self.process is not None and self.process.poll() is None:
            self._signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def _signal(self, sig: int) -> None:
        """Signal the postmaster itself (with ``runuser`` in front, the
        Popen's pid is runuser's, which forwards only some signals)."""
        assert self.process is not None
        pid = _postmaster_pid(self.data) if self._prefix else None
        with contextlib.suppress(ProcessLookupError):
            if pid is None:
                self.process.send_signal(sig)
            else:
                # runuser stays to reap its child (the postmaster), so no
                # zombie keeps postmaster.pid's process id alive
                os.kill(pid, sig)


def _postmaster_pid(data: Path) -> int | None:
    try:
        return int((data / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (read from /proc: no pgrep needed)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(") ", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is gone for our purpose (its parent, the postmaster, is dead)
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    return False


@contextlib.contextmanager
def private_postgres(settings: dict[str, str] | None = None) -> Iterator[PostgresProcess]:
    """A server for one test (to kill and restart at will), removed after."""
    directory = tempfile.mkdtemp(prefix="rankengine-pg-")
    try:
        server = PostgresProcess(Path(directory), settings)
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


_SHARED: dict[str, Any] = {}


def shared_postgres() -> PostgresProcess:
    """The session's server, started on first use; stopped at exit."""
    server = _SHARED.get("server")
    if server is None or server.process is None or server.process.poll() is not None:
        directory = tempfile.mkdtemp(prefix="rankengine-pg-")
        atexit.register(shutil.rmtree, directory, True)
        server = PostgresProcess(Path(directory))
        server.start()
        atexit.register(server.stop)
        _SHARED["server"] = server
    return server  # type: ignore[no-any-return]


@pytest.fixture(name="postgres_url", scope="session")
def postgres_url_fixture() -> Iterator[str]:
    """The connection string of the session's server."""
    server = shared_postgres()
    try:
        yield server.url
    finally:
        _SHARED.pop("server", None)
        server.stop()
