"""The asyncio face (rankengine.aio) and the game-server example.

* Writes awaited under ``fsync="always"`` return their results once
  durable, share fsyncs when many tasks write at once, and are all in the
  board reopened; reads are the board's, synchronous.
* A failed fsync fails every write waiting for it (LogError), and the
  board refuses later writes; a cancelled write task leaves the others be.
* ``examples/game_server.py`` runs on 127.0.0.1: a client task sends score
  events and asks for the top 10 and around-me; the answers match an
  in-memory model, and the events are in the board reopened.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
from pathlib import Path
from typing import Any

import pytest

from rankengine import Leaderboard
from rankengine.aio import AsyncLeaderboard
from rankengine.durable.records import LogError

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "game_server.py"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_awaited_writes_are_durable_and_share_fsyncs(tmp_path: Path) -> None:
    async def main() -> tuple[Any, ...]:
        board = await AsyncLeaderboard.open(tmp_path, fsync="always")
        async with board:
            results = await asyncio.gather(*(board.incr(f"p{i % 10}", 1) for i in range(400)))
            assert await board.set("solo", 7.5) is True
            assert await board.set_many({"x": 1, "y": 2}) == 2
            await board.set_meta("x", {"team": "red"})
            assert await board.remove("y") is True
            group = board.group_commit
            return results, board.items(), board.rank("p0"), group.syncs, len(board)

    results, items, rank, syncs, size = run(main())
    assert sorted(results)[-10:] == [40] * 10  # each member's last increment saw 40
    assert rank is not None and size == 12
    assert syncs < 400  # 400 tasks in flight shared fsyncs
    with Leaderboard.open(tmp_path) as again:
        assert again.items() == items
        assert again.meta("x") == {"team": "red"}


def test_everysec_writes_return_at_once(tmp_path: Path) -> None:
    async def main() -> Any:
        async with await AsyncLeaderboard.open(tmp_path, fsync="everysec") as board:
            assert board.group_commit is None
            await board.incr("ann", 2)
            return board.score("ann"), "ann" in board, repr(board)

    score, present, text = run(main())
    assert (score, present) == (2, True) and "AsyncLeaderboard" in text


def test_a_failed_fsync_fails_the_waiting_writes(tmp_path: Path) -> None:
    async def main() -> list[Any]:
        board = await AsyncLeaderboard.open(tmp_path, fsync="always")
        await board.incr("ann", 1)

        def broken(fd: int) -> None:
            raise OSError(5, "Input/output error")

        board.board._writer.sync_fn = broken
        outcome = await asyncio.gather(
            *(board.incr("bob", 1) for _ in range(5)), return_exceptions=True
        )
        with pytest.raises(LogError, match="refuses further writes"):
            await board.incr("cy", 1)
        await board.close()
        return outcome

    outcome = run(main())
    assert outcome and all(isinstance(o, LogError) for o in outcome), outcome
    with Leaderboard.open(tmp_path) as again:
        assert again.score("ann") == 1 and "cy" not in again


def test_a_cancelled_write_does_not_disturb_the_others(tmp_path: Path) -> None:
    async def main() -> Any:
        async with await AsyncLeaderboard.open(tmp_path, fsync="always") as board:
            tasks = [asyncio.ensure_future(board.incr("ann", 1)) for _ in range(20)]
            await asyncio.sleep(0)
            tasks[3].cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            return done, board.score("ann")

    done, score = run(main())
    assert sum(isinstance(d, asyncio.CancelledError) for d in done) <= 1
    assert score == 20  # a cancelled wait does not undo the write (it was applied)


def test_only_a_durable_board_is_wrapped() -> None:
    with pytest.raises(TypeError, match="durable board"):
        AsyncLeaderboard(Leaderboard())  # type: ignore[arg-type]


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("game_server", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_game_server_example_serves_events_top10_and_around_me(tmp_path: Path) -> None:
    game = load_example()
    rng = random.Random(20)
    events = [(f"player{rng.randrange(25)}", rng.randrange(1, 50)) for _ in range(300)]

    async def client(port: int) -> dict[str, Any]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def ask(request: Any) -> Any:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            return json.loads(await reader.readline())

        for player, points in events:
            reply = await ask({"op": "score", "player": player, "points": points})
            assert reply["ok"] and reply["rank"] >= 1
        replies = {
            "top": await ask({"op": "top"}),
            "around": await ask({"op": "around", "player": events[0][0]}),
            "nobody": await ask({"op": "around", "player": "nobody"}),
            "bad": await ask({"op": "fly"}),
            "badjson": None,
        }
        writer.write(b"{not json\n")
        await writer.drain()
        replies["badjson"] = json.loads(await reader.readline())
        writer.close()
        return replies

    async def main() -> dict[str, Any]:
        board = await AsyncLeaderboard.open(tmp_path, fsync="always")
        async with board:
            server = await game.start(board, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            async with server:
                # two clients at once: their events share fsyncs
                first, _ = await asyncio.gather(client(port), client(port))
            return first

    replies = run(main())
    model = Leaderboard()
    for player, points in events + events:  # (both clients sent them)
        model.incr(player, points)
    assert replies["top"] == {"ok": True, "top": game.rows(model.top(10))}
    assert replies["around"] == {"ok": True, "around": game.rows(model.around(events[0][0], 3, 3))}
    assert replies["nobody"] == {"ok": True, "around": []}
    assert replies["bad"]["ok"] is False and replies["badjson"]["ok"] is False
    with Leaderboard.open(tmp_path) as again:
        assert dict(again.items()) == dict(model.items())
