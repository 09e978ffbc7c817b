"""Real Redis servers for the tests: real server processes on 127.0.0.1, no stand-ins.

The test session starts what it needs on 127.0.0.1 and stops it at the end:

* :func:`redis_url` -- one standalone ``redis-server`` (no persistence: a
  lost server is what the event log is there to rebuild);
* :func:`redis_cluster` -- a Redis Cluster of 3 masters and 3 replicas
  (``--cluster-enabled yes``, assembled with ``redis-cli --cluster create``),
  waited on until every node reports ``cluster_state:ok``.

Finding the server: ``redis-server`` and ``redis-cli`` on ``PATH``.  When
they are missing and the session runs as root on a system with ``apt-get``,
Debian's ``redis-server`` package is installed first.  When they are still
missing, a test that needs them *fails* with a clear message if ``CI`` (or
``RANKENGINE_REQUIRE_REDIS``) is set in the environment, and is skipped with
the same message otherwise (a developer laptop without Redis).

Test modules import the fixtures they use explicitly (each is registered
under the name without ``_fixture``, so a test asks for ``redis_url``)::

    from redis_service import redis_url_fixture, redis_cluster_fixture  # noqa: F401

Every process started here is stopped by the fixture's finaliser, and, as a
last resort, by an ``atexit`` hook, so a session never leaves servers behind.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from services import STARTED, apt_install, unavailable

#: Seconds to wait for a server to answer PING after it starts.
START_TIMEOUT = 10.0
#: Seconds to wait for a new cluster to report ``cluster_state:ok`` everywhere.
CLUSTER_TIMEOUT = 30.0
#: Cluster node timeout (ms): small, so that a killed master's replica takes
#: over within a couple of seconds in the failover test.
CLUSTER_NODE_TIMEOUT_MS = 1000
#: The cluster's shape: masters, and replicas per master.
CLUSTER_MASTERS = 3
CLUSTER_REPLICAS = 1


def _unavailable(message: str) -> None:
    unavailable("Redis", "RANKENGINE_REQUIRE_REDIS", message)


def _try_install() -> None:
    apt_install("redis-server")


_BINARIES: dict[str, str] | None = None


def redis_binaries() -> dict[str, str]:
    """Paths of ``redis-server`` and ``redis-cli``; install, fail or skip as documented."""
    global _BINARIES  # noqa: PLW0603 - found (or installed) once per session
    if _BINARIES is None:
        server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if server is None or cli is None:
            _try_install()
            server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if server is None or cli is None:
            _unavailable(
                "redis-server/redis-cli not found on PATH and could not be installed "
                "(install Debian's 'redis-server' package, or your OS's equivalent)"
            )
        assert server is not None and cli is not None
        _BINARIES = {"server": server, "cli": cli}
    return _BINARIES


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(*, bus: bool = False) -> int:
    """A free loopback port (and, with ``bus``, port + 10000 free too, for the cluster bus)."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if not bus:
            return port
        if port + 10000 < 65536 and _port_is_free(port + 10000):
            return port
    raise RuntimeError("no free loopback port pair for a cluster node")


class PortTaken(RuntimeError):
    """The server could not bind its port: another process took it first."""


class RedisProcess:
    """One ``redis-server`` on 127.0.0.1, in the foreground, without persistence."""

    def __init__(self, port: int, directory: Path, *extra: str, bus: bool = False) -> None:
        self.port = port
        self.directory = directory
        self.extra = extra
        #: A cluster node: its port + 10000 must be free too (the cluster bus).
        self.bus = bus
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or restart) the server and wait until it answers PING.

        A port taken meanwhile by another process (ports are picked free,
        then bound by the server) is replaced by a new one, a few times."""
        for attempt in range(5):
            try:
                self._start()
                return
            except PortTaken:
                if attempt == 4:
                    raise
                self.port = free_port(bus=self.bus)

    def _start(self) -> None:
        binaries = redis_binaries()
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            binaries["server"],
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            str(self.directory),
            "--logfile",
            str(self.directory / "redis.log"),
            *self.extra,
        ]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        STARTED.append(self.process)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.directory / "redis.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                if "Address already in use" in tail:
                    raise PortTaken(self.port)
                raise RuntimeError(f"redis-server on port {self.port} exited:\n{tail}")
            if self.ping():
                return
            time.sleep(0.02)
        raise RuntimeError(
            f"redis-server on port {self.port} did not answer within {START_TIMEOUT} s"
        )

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL: the server dies with everything it held in memory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def unique_name(prefix: str = "t") -> str:
    """A board name no other test uses (boards share the session's servers)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def standalone_server() -> Iterator[RedisProcess]:
    """A private standalone server for one test (to kill and restart at will)."""
    with tempfile.TemporaryDirectory(prefix="rankengine-redis-") as directory:
        server = RedisProcess(free_port(), Path(directory))
        server.start()
        try:
            yield server
        finally:
            server.stop()


_SHARED: dict[str, Any] = {}


def shared_server() -> RedisProcess:
    """The session's standalone server, started on first use (also outside
    fixtures, for board factories); stopped by :func:`redis_server_fixture`'s
    finaliser or, failing that, at exit."""
    server = _SHARED.get("server")
    if server is None or server.process is None or server.process.poll() is not None:
        redis_binaries()
        directory = tempfile.mkdtemp(prefix="rankengine-redis-")
        server = RedisProcess(free_port(), Path(directory))
        server.start()
        _SHARED["server"] = server
        atexit.register(shutil.rmtree, directory, True)
    return server  # type: ignore[no-any-return]


def shared_client() -> Any:
    """One redis-py client on :func:`shared_server` (thread-safe, pooled)."""
    server = shared_server()
    client = _SHARED.get("client")
    if client is None or _SHARED.get("client_port") != server.port:
        import redis

        client = redis.Redis.from_url(server.url)
        _SHARED["client"], _SHARED["client_port"] = client, server.port
    return client


def redis_board(**kwargs: Any) -> Any:
    """A new, empty :class:`~rankengine.redis.board.RedisLeaderboard` on the
    session's server (the behaviour suites' ``"redis"`` backend factory)."""
    from rankengine.redis.board import RedisLeaderboard

    return RedisLeaderboard(shared_client(), unique_name("board"), **kwargs)


@pytest.fixture(name="redis_server", scope="session")
def redis_server_fixture() -> Iterator[RedisProcess]:
    """The session's standalone server."""
    server = shared_server()
    try:
        yield server
    finally:
        client = _SHARED.pop("client", None)
        if client is not None:
            client.close()
        _SHARED.pop("server", None)
        server.stop()


@pytest.fixture(name="redis_url", scope="session")
def redis_url_fixture(redis_server: RedisProcess) -> str:
    """URL of the session's standalone server (``redis://127.0.0.1:PORT/0``)."""
    return redis_server.url


@pytest.fixture(name="redis_client")
def redis_client_fixture(redis_url: str) -> Iterator[Any]:
    """A fresh redis-py client on the standalone server (closed after the test)."""
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        client.close()


class Cluster:
    """A running Redis Cluster on loopback ports."""

    def __init__(self, nodes: list[RedisProcess]) -> None:
        self.nodes = nodes

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    def client(self, **options: Any) -> Any:
        """A ``redis.cluster.RedisCluster`` client that knows every node."""
        from redis.cluster import ClusterNode, RedisCluster

        startup = [ClusterNode("127.0.0.1", port) for port in self.ports]
        return RedisCluster(startup_nodes=startup, **options)

    def node(self, port: int) -> RedisProcess:
        return next(node for node in self.nodes if node.port == port)

    def info(self, port: int) -> dict[str, str]:
        """``CLUSTER INFO`` of one node, parsed (empty if it does not answer)."""
        result = subprocess.run(
            [redis_binaries()["cli"], "-p", str(port), "cluster", "info"],
            capture_output=True,
            text=True,
            check=False,
            timeout=5,
        )
        out: dict[str, str] = {}
        for line in result.stdout.splitlines():
            key, _, value = line.strip().partition(":")
            if value:
                out[key] = value
        return out

    def wait_ok(self, ports: list[int] | None = None, timeout: float = CLUSTER_TIMEOUT) -> None:
        """Wait until every live node reports ``cluster_state:ok``."""
        wanted = self.ports if ports is None else ports
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.info(port).get("cluster_state") == "ok" for port in wanted):
                return
            time.sleep(0.1)
        raise RuntimeError(f"cluster did not reach cluster_state:ok within {timeout} s")

    def wait_replicas(self, timeout: float = CLUSTER_TIMEOUT) -> None:
        """Wait until every live replica has a working link to its master."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending = []
            for node in self.nodes:
                if not node.ping():
                    continue
                info = subprocess.run(
                    [redis_binaries()["cli"], "-p", str(node.port), "info", "replication"],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=5,
                ).stdout
                if "role:slave" in info and "master_link_status:up" not in info:
                    pending.append(node.port)
            if not pending:
                return
            time.sleep(0.1)
        raise RuntimeError(f"replicas did not finish their first sync within {timeout} s")

    def masters(self) -> list[int]:
        """Ports of the nodes that are masters now (asked of any live node)."""
        for node in self.nodes:
            if not node.ping():
                continue
            result = subprocess.run(
                [redis_binaries()["cli"], "-p", str(node.port), "cluster", "nodes"],
                capture_output=True,
                text=True,
                check=False,
                timeout=5,
            )
            ports = []
            for line in result.stdout.splitlines():
                fields = line.split()
                if len(fields) > 2 and "master" in fields[2] and "fail" not in fields[2]:
                    ports.append(int(fields[1].split("@")[0].rsplit(":", 1)[1]))
            return sorted(ports)
        return []


@contextlib.contextmanager
def start_cluster(
    masters: int = CLUSTER_MASTERS, replicas: int = CLUSTER_REPLICAS
) -> Iterator[Cluster]:
    """Start ``masters * (1 + replicas)`` nodes, join them into a cluster, and stop them after."""
    binaries = redis_binaries()
    with tempfile.TemporaryDirectory(prefix="rankengine-cluster-") as directory:
        nodes: list[RedisProcess] = []
        try:
            for _ in range(masters * (1 + replicas)):
                port = free_port(bus=True)
                nodes.append(
                    RedisProcess(
                        port,
                        Path(directory) / str(port),
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        f"nodes-{port}.conf",
                        "--cluster-node-timeout",
                        str(CLUSTER_NODE_TIMEOUT_MS),
                        # keep serving the slots that are up while one master fails over
                        "--cluster-require-full-coverage",
                        "no",
                        # a replica may always take over (however old its data),
                        "--cluster-replica-validity-factor",
                        "0",
                        # and gets its first copy at once, not after 5 s
                        "--repl-diskless-sync-delay",
                        "0",
                        bus=True,
                    )
                )
                nodes[-1].start()
            create = [
                binaries["cli"],
                "--cluster",
                "create",
                *[f"127.0.0.1:{node.port}" for node in nodes],
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ]
            result = subprocess.run(create, capture_output=True, text=True, check=False, timeout=60)
            if result.returncode != 0:
                raise RuntimeError(
                    f"redis-cli --cluster create failed:\n{result.stdout}{result.stderr}"
                )
            cluster = Cluster(nodes)
            cluster.wait_ok()
            cluster.wait_replicas()
            yield cluster
        finally:
            for node in nodes:
                node.stop()


@pytest.fixture(name="redis_cluster", scope="session")
def redis_cluster_fixture() -> Iterator[Cluster]:
    """The session's 3-master (plus 3 replicas) Redis Cluster."""
    redis_binaries()
    with start_cluster() as cluster:
        yield cluster
