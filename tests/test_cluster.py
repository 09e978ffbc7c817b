"""Boards on a real Redis Cluster (3 masters, 3 replicas, on loopback).

* A board's keys share one hash slot; a sharded board's shards spread over
  slots and masters.
* Boards and sharded boards on the cluster answer as one in-process board.
* Failover: killing the master that holds a board is survived.  Documented
  behaviour: writes made while the cluster elects the replica raise (they
  were not acknowledged and are not in the log); once the replica serves the
  slot, writes succeed again; any acknowledged write that the replica had
  not received is restored from the event log before the next write applies
  (the write guard sees Redis behind the log).  No acknowledged write is lost.
* Losing both copies of a slot (master and replica restarted empty) is the
  "lost Redis" case: the board is rebuilt from its log.

The failover tests change the cluster's topology and restore its health
before they end; they run last in this module.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis_service import Cluster, redis_cluster_fixture, unique_name  # noqa: F401

import rankengine.redis.combine as redis_combine_module
from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard
from rankengine.sharded.board import ShardedLeaderboard

pytestmark = [pytest.mark.redis, pytest.mark.cluster]

#: Seconds a write keeps being retried while the cluster fails over.
FAILOVER_TIMEOUT = 30.0


@pytest.fixture
def cluster_client(redis_cluster: Cluster) -> Iterator[Any]:
    client = redis_cluster.client()
    try:
        yield client
    finally:
        client.close()


def owner_port(client: Any, key: str) -> int:
    return int(client.get_node_from_key(key).port)


def test_a_boards_keys_share_one_slot(cluster_client: Any) -> None:
    b = RedisLeaderboard(cluster_client, unique_name())
    b.set_many({"ann": 3, "bob": 2})
    b.set_meta("ann", {"x": 1})
    b.rank("bob", style="dense")  # builds the distinct scores: all six keys exist
    slots = {cluster_client.keyslot(key) for key in b.keys}
    assert len(slots) == 1
    # every key really lives on the node that owns that slot
    owner = cluster_client.get_node_from_key(b.keys[0])
    assert sum(cluster_client.exists(key) for key in b.keys) == 6
    assert {owner_port(cluster_client, key) for key in b.keys} == {owner.port}


def test_shards_spread_over_slots_and_masters(cluster_client: Any) -> None:
    sharded = ShardedLeaderboard.on_redis(cluster_client, "global", 7)
    try:
        slots = [cluster_client.keyslot(board.keys[0]) for board in sharded.shards]
        assert len(set(slots)) == 7
        masters = {owner_port(cluster_client, board.keys[0]) for board in sharded.shards}
        assert len(masters) >= 2
        for board in sharded.shards:  # but each shard stays in one slot
            assert len({cluster_client.keyslot(key) for key in board.keys}) == 1
    finally:
        sharded.close()


def random_workload(boards: list[Any], seed: int, steps: int = 250) -> None:
    rng = random.Random(seed)
    for _ in range(steps):
        member = f"p{rng.randint(0, 60)}"
        roll = rng.random()
        score, step = rng.randint(0, 20), rng.choice([1, 2.5, -1])
        if roll < 0.5:
            results = {repr(b.set(member, score)) for b in boards}
        elif roll < 0.7:
            results = {repr(b.incr(member, step)) for b in boards}
        elif roll < 0.8:
            pairs = [(f"p{rng.randint(0, 60)}", rng.randint(0, 20)) for _ in range(4)]
            results = {repr(b.set_many(pairs, when="better")) for b in boards}
        elif roll < 0.9:
            results = {repr(b.remove(member)) for b in boards}
        else:
            results = {repr(b.set_meta(member, {"r": 1})) if member in b else "" for b in boards}
        assert len(results) == 1


def test_boards_on_the_cluster_answer_as_one_board(cluster_client: Any) -> None:
    single = Leaderboard()
    plain = RedisLeaderboard(cluster_client, unique_name())
    sharded = ShardedLeaderboard.on_redis(cluster_client, unique_name(), 7)
    try:
        boards = [single, plain, sharded]
        random_workload(boards, seed=7)
        want = single.items()
        for board in boards[1:]:
            assert board.items() == want
            assert board.clock == single.clock
            for style in ("unique", "dense", "competition"):
                assert board.page(2, 10, style=style) == single.page(2, 10, style=style)
                for member in list(single)[::9]:
                    assert board.around(member, 2, 2, style=style) == single.around(
                        member, 2, 2, style=style
                    )
            board._check()
    finally:
        sharded.close()


def test_a_union_in_chunks_is_one_transaction_on_the_cluster(
    cluster_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A union bigger than one LOAD chunk goes as one MULTI/EXEC to the
    master of the result's slot (the board's keys share it), with its
    metadata, and equals the in-process union."""
    monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", 6)
    a, b = Leaderboard(), Leaderboard()
    a.set_many({f"p{i}": i % 5 for i in range(30)})
    b.set_many({f"p{i}": i % 3 for i in range(20, 40)})
    for i in range(0, 40, 3):
        (a if f"p{i}" in a else b).set_meta(f"p{i}", {"i": i})
    here = Leaderboard.union([a, b], weights=[1, 2])
    there = RedisLeaderboard.union([a, b], weights=[1, 2], redis=cluster_client)
    assert there.items() == here.items() and there.clock == here.clock == 40
    assert [there.meta(m) for m in there] == [here.meta(m) for m in here]
    assert there.writes == 1
    there._check()


def move_slot(cluster: Cluster, slot: int, source: int, target: int) -> None:
    """Migrate ``slot`` and its keys from master ``source`` to master
    ``target`` (as ``redis-cli --cluster reshard`` does), behind the back of
    every cluster client: their slot maps still name the old owner."""
    import redis

    nodes = {port: redis.Redis(port=port) for port in cluster.masters()}
    try:
        ids = {port: c.execute_command("CLUSTER", "MYID").decode() for port, c in nodes.items()}
        nodes[target].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source])
        nodes[source].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target])
        while keys := nodes[source].execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            nodes[source].execute_command(
                "MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys
            )
        for port in (target, source, *nodes):
            nodes[port].execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[target])
    finally:
        for client in nodes.values():
            client.close()


def test_sharded_reads_follow_a_shard_whose_slot_moved(
    redis_cluster: Cluster, cluster_client: Any
) -> None:
    """The pipelined reads go to the node the client believes owns each
    shard; after a reshard that node answers MOVED, and the reads follow it."""
    single = Leaderboard()
    sharded = ShardedLeaderboard.on_redis(cluster_client, unique_name(), 3)
    scores = {f"p{i}": i % 7 for i in range(60)}
    single.set_many(scores)
    sharded.set_many(scores)
    assert sharded.top(5) == single.top(5)
    keys = sharded.shards[0].keys
    slot, source = cluster_client.keyslot(keys[0]), owner_port(cluster_client, keys[0])
    target = next(port for port in redis_cluster.masters() if port != source)
    move_slot(redis_cluster, slot, source, target)
    try:
        for _ in range(2):  # the redirection, then the refreshed slot map
            assert sharded.top(5) == single.top(5)
            assert sharded.page(3, 10, style="dense") == single.page(3, 10, style="dense")
            assert sharded.around("p30", 3, 3) == single.around("p30", 3, 3)
        assert owner_port(cluster_client, keys[0]) == target
    finally:
        move_slot(redis_cluster, slot, target, source)


# ----------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------
def retrying(action: Callable[[], Any]) -> Any:
    """Run a write until the cluster accepts it; failed attempts were not
    acknowledged (they raised), so they are simply tried again."""
    from redis.exceptions import RedisError

    deadline = time.monotonic() + FAILOVER_TIMEOUT
    while True:
        try:
            return action()
        except RedisError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def node_roles(cluster: Cluster) -> dict[int, tuple[str, str, str]]:
    """port -> (node id, 'master'/'slave', id of its master or '-')."""
    import subprocess

    from redis_service import redis_binaries

    for node in cluster.nodes:
        if not node.ping():
            continue
        out = subprocess.run(
            [redis_binaries()["cli"], "-p", str(node.port), "cluster", "nodes"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        roles = {}
        for line in out.splitlines():
            fields = line.split()
            port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
            role = "master" if "master" in fields[2] else "slave"
            roles[port] = (fields[0], role, fields[3])
        return roles
    raise RuntimeError("no cluster node answers")


#: How long a test waits for the cluster's gossip to settle a change (a
#: restarted node learning it was failed over, a replica being attached).
SETTLE_S = 30.0


def replica_of(cluster: Cluster, master_port: int) -> int:
    """The port of a replica of ``master_port``, waiting for the cluster's
    view to show one (after a failover the old master rejoins as a replica
    only once gossip reaches it)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        roles = node_roles(cluster)
        master_id = roles[master_port][0]
        found = [p for p, (_, role, of) in roles.items() if role == "slave" and of == master_id]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no replica of {master_port} after {SETTLE_S} s: {roles}")
        time.sleep(0.2)


def wait_role(cluster: Cluster, port: int, role: str) -> str:
    """Wait until the cluster's view gives ``port`` the ``role``; return the last seen role."""
    deadline = time.monotonic() + SETTLE_S
    seen = node_roles(cluster)[port][1]
    while seen != role and time.monotonic() < deadline:
        time.sleep(0.2)
        seen = node_roles(cluster)[port][1]
    return seen


def wait_until_serving(cluster: Cluster, board: RedisLeaderboard) -> None:
    retrying(lambda: len(board))
    cluster.wait_ok([node.port for node in cluster.nodes if node.ping()])


def test_a_killed_master_is_survived_without_losing_acknowledged_writes(
    redis_cluster: Cluster, cluster_client: Any, tmp_path: Any
) -> None:
    model = Leaderboard()  # exactly the acknowledged writes
    with RedisLeaderboard(cluster_client, unique_name(), log=tmp_path, fsync="always") as board:
        rng = random.Random(3)

        def write(i: int) -> None:
            member, score = f"p{rng.randint(0, 80)}", i
            retrying(lambda: board.set(member, score))
            model.set(member, score)  # acknowledged: the call returned

        for i in range(150):
            write(i)
        master = owner_port(cluster_client, board.keys[0])
        replica = replica_of(redis_cluster, master)
        redis_cluster.node(master).kill()
        for i in range(150, 300):  # the first ones wait out the failover
            write(i)
        assert owner_port(cluster_client, board.keys[0]) == replica
        assert board.items() == model.items()
        assert board.clock == model.clock
        assert board.verify() == []
        board._check()
        # the old master comes back as a replica of the new one
        redis_cluster.node(master).start()
        redis_cluster.wait_ok()
        redis_cluster.wait_replicas()
        assert wait_role(redis_cluster, master, "slave") == "slave"
        write(300)
        assert board.items() == model.items()


def test_a_slot_lost_on_master_and_replica_is_rebuilt_from_the_log(
    redis_cluster: Cluster, cluster_client: Any, tmp_path: Any
) -> None:
    name = unique_name()
    with RedisLeaderboard(cluster_client, name, log=tmp_path, fsync="always") as board:
        board.set_many({f"p{i}": i * 1.5 for i in range(100)})
        board.set_meta("p7", {"team": "red"})
        expected = (board.items(), board.clock, board.meta("p7"))
        master = owner_port(cluster_client, board.keys[0])
        replica = replica_of(redis_cluster, master)
        for port in (master, replica):  # both copies of the slot are gone
            redis_cluster.node(port).kill()
        for port in (master, replica):  # they come back empty (no persistence)
            redis_cluster.node(port).start()
        wait_until_serving(redis_cluster, board)
        redis_cluster.wait_replicas()
        assert len(board) == 0
        retrying(lambda: board.incr("p7", 1))  # the guard rebuilds from the log first
        assert board.repairs == 1
        assert board.items()[0] == ("p99", 148.5)
        assert board.score("p7") == 11.5
        assert board.meta("p7") == expected[2]
        assert board.clock == expected[1] + 1
        assert board.verify() == []
    redis_cluster.wait_ok()


def test_plain_ranks_on_the_cluster(cluster_client: Any) -> None:
    """A member's ranks by plain commands (and a pipeline's two-step ranks)
    reach the board's node through a cluster client."""
    board = RedisLeaderboard(cluster_client, unique_name())
    board.set_many({f"p{i}": i % 5 for i in range(20)})
    board.rank("p0", style="dense")  # dense counts built
    twin = Leaderboard()
    twin.set_many(board.items())
    reader = RedisLeaderboard(cluster_client, board.name)
    for style in ("unique", "competition", "dense"):
        for member in ("p3", "p7", "p19", "nobody"):
            assert reader.rank(member, style=style) == twin.rank(member, style=style)
        with reader.pipeline() as p:
            for member in ("p4", "p11", "nobody"):
                p.rank(member, style=style)
        assert p.results == [twin.rank(m, style=style) for m in ("p4", "p11", "nobody")]
