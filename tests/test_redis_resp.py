"""The board's own command encoding (rankengine.redis.resp) against
redis-py's packers, and a board on a client with each reply parser."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard
from rankengine.redis.resp import Packer, array

redis_parsers = pytest.importorskip("redis._parsers")
redis_connection = pytest.importorskip("redis.connection")
Encoder = redis_parsers.Encoder
PythonRespSerializer = redis_connection.PythonRespSerializer

ARGS = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.text(max_size=20),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
    ),
    min_size=1,
    max_size=12,
)


def redis_py_packed(args: list[Any], encoding: str = "utf-8") -> bytes:
    """``args`` as redis-py's pure-Python packer sends them."""
    encoder = Encoder(encoding, "strict", False)
    return b"".join(PythonRespSerializer(6000, encoder.encode).pack("CMD", *args))


@settings(deadline=None)  # the first example may meet a cold import on a busy machine
@given(ARGS)
def test_commands_are_packed_as_redis_py_packs_them(args: list[Any]) -> None:
    packer = Packer()
    assert packer.command(["CMD", *args]) == redis_py_packed(args)
    # the constant parts, encoded once, are the same bytes
    head = array(len(args) + 1) + packer.constant("CMD")
    assert head + packer.args(args) == redis_py_packed(args)
    assert b"".join([packer.arg(a) for a in args]) == packer.args(args)


@settings(deadline=None)
@given(st.lists(st.text(max_size=10), min_size=1, max_size=5))
def test_str_takes_the_clients_encoding(texts: list[str]) -> None:
    encodable = [t for t in texts if all(ord(c) < 256 for c in t)]
    if encodable:
        assert Packer("latin-1").command(["CMD", *encodable]) == redis_py_packed(
            list(encodable), "latin-1"
        )


@settings(deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(
                st.sampled_from(["1.0", "i", "f", "", "n", "-0.0", "é", "x" * 24, "x" * 25]),
                st.text(max_size=30),
                st.binary(max_size=8),
                st.integers(-5, 5),
            ),
            min_size=1,
            max_size=12,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_texts_kept_encoded_are_the_same_bytes(commands: list[list[Any]]) -> None:
    """One packer for many commands (the short texts it keeps encoded met
    again): each command's bytes are redis-py's, and :meth:`Packer.arg`'s."""
    packer = Packer()
    for args in commands:
        assert array(len(args) + 1) + packer.constant("CMD") + packer.args(args) == (
            redis_py_packed(args)
        )
        assert packer.args(args) == b"".join([packer.arg(a) for a in args])


def test_constants_of_equal_values_of_other_types_stay_apart() -> None:
    packer = Packer()
    assert packer.constant(1) == b"$1\r\n1\r\n"
    assert packer.constant(1.0) == b"$3\r\n1.0\r\n"  # (1 == 1.0: one dict key, two arguments)
    assert packer.constant("1") == b"$1\r\n1\r\n"


def test_other_types_are_refused() -> None:
    with pytest.raises(TypeError, match="not bool"):
        Packer().args([True])
    with pytest.raises(TypeError, match="not NoneType"):
        Packer().command(["CMD", None])


@pytest.mark.redis
@pytest.mark.parametrize("parser", ["python", "hiredis"])
def test_a_board_on_either_parser(redis_url: str, parser: str) -> None:
    """The board reads its replies with the connection's parser: the
    pure-Python one and hiredis's give the same answers."""
    import redis
    from redis._parsers import _HiredisParser, _RESP2Parser

    if parser == "hiredis":
        pytest.importorskip("hiredis")
    parser_class = _HiredisParser if parser == "hiredis" else _RESP2Parser
    client = redis.Redis.from_url(redis_url, parser_class=parser_class)
    assert client.connection_pool.connection_kwargs["parser_class"] is parser_class
    board = RedisLeaderboard(client, unique_name())
    assert board._direct is not None  # the board's own sending
    twin = Leaderboard()
    start = {"ann": 10, "bob": 20, "cid": 20, "dee": 5}
    board.set_many(start)
    twin.set_many(start)
    assert board.incr("ann", 15) == twin.incr("ann", 15)
    assert board.incr("eve", 2.5) == twin.incr("eve", 2.5)
    assert [board.rank(m) for m in ("ann", "bob", "nobody")] == [
        twin.rank(m) for m in ("ann", "bob", "nobody")
    ]
    with board.pipeline() as p:
        p.incr("dee", 30).rank("dee").rank("cid", style="dense").top(2).score("bob")
    want = [twin.incr("dee", 30), twin.rank("dee"), twin.rank("cid", style="dense")]
    assert p.results == [*want, twin.top(2), twin.score("bob")]
    assert board.items() == twin.items()
    board._check()
    client.close()
