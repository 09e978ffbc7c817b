"""A board's calls on a pooled connection (rankengine.redis.direct): a first
sending does not look for an earlier run, a resend does, and a client that
never resends keeps no reply; against a real redis-server."""

from __future__ import annotations

from typing import Any

import pytest
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard, encode_member
from rankengine.redis.scripts import LIBRARY_NAME

pytestmark = pytest.mark.redis


def resending(url: str, drop: list[str] | None = None) -> tuple[Any, list[str]]:
    """A client that sends a call again after a dropped connection (as
    ``redis.Redis(host, port)`` does), and the modes (``ARGV[1]``) of the
    function calls it sent, in order.  ``drop``: function names whose next
    call's reply is lost after Redis ran it (one each)."""
    import redis
    from redis.connection import Connection, parse_url

    modes: list[str] = []
    armed = list(drop or [])

    class Recording(Connection):
        def send_packed_command(self, command: Any, *args: Any, **kwargs: Any) -> None:
            packed = b"".join(command) if isinstance(command, list) else command
            self.losing = False
            for name in list(armed):
                if name.encode() in packed:
                    armed.remove(name)
                    self.losing = True
            parts = packed.split(b"\r\n")
            for i, part in enumerate(parts):
                if part == b"FCALL":  # FCALL name numkeys keys... mode
                    nkeys = int(parts[i + 4])
                    modes.append(parts[i + 6 + 2 * nkeys].decode())
            super().send_packed_command(command, *args, **kwargs)

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = super().read_response(*args, **kwargs)
            if getattr(self, "losing", False):
                self.losing = False
                raise redis.ConnectionError("connection lost before the reply")
            return reply

    client = redis.Redis(**parse_url(url))
    client.connection_pool.connection_class = Recording
    return client, modes


def inner_calls(client: Any) -> dict[str, int]:
    """Commands the server ran since the last ``CONFIG RESETSTAT`` (those
    a function ran included), by name."""
    return {
        name.removeprefix("cmdstat_"): int(stats["calls"])
        for name, stats in client.info("commandstats").items()
    }


def reply_keys(client: Any, board: RedisLeaderboard) -> list[bytes]:
    return list(client.keys(board.keys[5][:-1] + "r:*"))


def test_a_plain_client_takes_the_pooled_path(redis_url: str, redis_client: Any) -> None:
    import redis

    assert RedisLeaderboard(redis_client, unique_name())._direct is not None
    single = redis.Redis.from_url(redis_url, single_connection_client=True)
    board = RedisLeaderboard(single, unique_name())
    assert board._direct is None  # its one connection is redis-py's to use
    board.set_many({"ann": 1, "bob": 2})
    assert board.incr("ann", 5) == 6 and board.rank("ann") == 1
    board._check()
    single.close()


def test_a_client_that_never_resends_keeps_no_reply(redis_client: Any) -> None:
    # redis.Redis.from_url (the fixture's client): a Retry of 0 retries
    board = RedisLeaderboard(redis_client, unique_name())
    twin = Leaderboard()
    board.set_many({"ann": 1, "bob": 2})
    twin.set_many({"ann": 1, "bob": 2})
    writes = board.writes
    redis_client.config_resetstat()
    assert [board.incr("ann", 3), board.set("cid", 7), board.incr("bob", -1)] == [
        twin.incr("ann", 3),
        twin.set("cid", 7),
        twin.incr("bob", -1),
    ]
    with board.pipeline() as p:
        p.incr("ann", 1).set("dee", 2).rank("ann")
    assert p.results == [twin.incr("ann", 1), twin.set("dee", 2), twin.rank("ann")]
    ran = inner_calls(redis_client)
    assert ran["fcall"] == 3 + 2
    assert "get" not in ran and "set" not in ran  # no reply key read or written
    assert reply_keys(redis_client, board) == []
    assert board.writes == writes + 5 and board.items() == twin.items()
    board._check()


def test_a_first_sending_keeps_its_reply_without_looking(redis_url: str) -> None:
    client, modes = resending(redis_url)
    board = RedisLeaderboard(client, unique_name())
    board.set_many({"ann": 1, "bob": 2})
    client.config_resetstat()
    modes.clear()
    board.incr("ann", 3)
    with board.pipeline() as p:
        p.incr("bob", 1).set("cid", 3)
    ran = inner_calls(client)
    assert ran["set"] == 3  # each write keeps its reply for a resend...
    assert "get" not in ran  # ...and none looked for an earlier run
    assert [mode[4] for mode in modes if len(mode) > 4] == ["!", "!", "!"]
    assert len(reply_keys(client, board)) == 2  # the handle's, and the pipeline's second
    board._check()


@pytest.mark.parametrize("piped", [False, True])
def test_a_write_resent_after_a_lost_reply_is_applied_once(redis_url: str, piped: bool) -> None:
    client, modes = resending(redis_url, drop=[f"{LIBRARY_NAME}_incr"])
    board = RedisLeaderboard(client, unique_name())
    board.set_many({"ann": 10, "bob": 20})
    writes = board.writes
    modes.clear()
    if piped:
        with board.pipeline() as p:
            p.incr("ann", 5).incr("bob", 1).rank("ann")
        assert p.results == [15, 21, 2]
    else:
        assert board.incr("ann", 5) == 15
    assert board["ann"] == 15 and board.writes == writes + 1 + piped  # once each
    # the first sending marked '!', the resend '#', with the same call numbers
    modes = [m for m in modes if m[4:5] in ("!", "#")]  # (the writes)
    sent = len(modes) // 2
    assert sent == 1 + piped
    first, again = modes[:sent], modes[sent:]
    assert [m[4] for m in first] == ["!"] * sent and [m[4] for m in again] == ["#"] * sent
    assert [m[5:] for m in first] == [m[5:] for m in again]
    board._check()


def test_a_resent_call_finds_its_reply_and_a_new_one_runs(redis_client: Any) -> None:
    """The function's side of the contract, sent by hand: '#' looks for the
    call's reply (a resend answers it, applies nothing), '!' does not."""
    board = RedisLeaderboard(redis_client, unique_name())
    board.set("ann", 10)
    keys = [*board.keys, board._reply_key()]
    settings = f"@{board._stored_sha}"

    def incr(mark: str, number: int) -> Any:
        mode = f"{board._mode}{mark}{number}{settings}"
        return board._scripts("INCR", keys, [mode, encode_member("ann"), "5.0", "i", "", 0])

    first = incr("!", 7)
    assert incr("#", 7) == first  # the resend: the first run's reply
    assert board["ann"] == 15
    incr("#", 8)  # another call: it runs
    assert board["ann"] == 20
    board._check()


@pytest.mark.parametrize("resends", [False, True])
def test_a_server_that_lost_the_library_gets_it_again(
    redis_url: str, redis_client: Any, resends: bool
) -> None:
    """A restart or a failover can leave the server without the library:
    the first call through the pooled path loads it again and is applied
    once, alone and in a pipeline."""
    client = resending(redis_url)[0] if resends else redis_client
    board = RedisLeaderboard(client, unique_name())
    board.set_many({"ann": 1, "bob": 2})
    writes = board.writes
    client.function_flush()  # as after a restart without persistence
    assert board.incr("ann", 4) == 5
    client.function_flush()
    with board.pipeline() as p:
        p.incr("bob", 1).set("cid", 9).rank("cid")
    assert p.results == [3, True, 1]
    assert board.writes == writes + 3
    assert board.items() == [("cid", 9), ("ann", 5), ("bob", 3)]
    board._check()
