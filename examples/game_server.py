"""A small game server: records score events durably and answers top-10 and
around-me, on asyncio streams (one JSON object per line).

Run it::

    python examples/game_server.py scores/ --port 8765
    # then, from another terminal:
    printf '%s\\n' '{"op": "score", "player": "ann", "points": 30}' \\
        '{"op": "top"}' | nc 127.0.0.1 8765

Requests and replies (one line each):

* ``{"op": "score", "player": P, "points": N}`` -> ``{"ok": true, "score": S,
  "rank": R}``: the event is durable (``fsync="always"``, group commit)
  when the reply is sent.
* ``{"op": "top"}`` -> ``{"ok": true, "top": [[rank, player, score], ...]}``
  (the best 10).
* ``{"op": "around", "player": P}`` -> ``{"ok": true, "around": [...]}`` (the
  player with up to 3 ahead and 3 behind; empty if unknown).
* anything else -> ``{"ok": false, "error": "..."}``.

Writes are awaited (``AsyncLeaderboard``): the loop keeps serving while the
disk works, and the events of many connections share each fsync.  Reads
are plain calls: in memory, microseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # (run from a checkout)

from rankengine.aio import AsyncLeaderboard

#: The longest request line accepted (bytes).
MAX_LINE = 4096


def rows(entries: Any) -> list[list[Any]]:
    return [[e.rank, e.member, e.score] for e in entries]


async def answer(board: AsyncLeaderboard, request: Any) -> dict[str, Any]:
    """The reply to one request."""
    if not isinstance(request, dict):
        return {"ok": False, "error": "a request is a JSON object"}
    op = request.get("op")
    player = request.get("player")
    if op == "score":
        points = request.get("points")
        if not isinstance(player, str) or type(points) not in (int, float):
            return {"ok": False, "error": "score needs a player (string) and points (number)"}
        score = await board.incr(player, points)  # returns once durable
        return {"ok": True, "score": score, "rank": board.rank(player)}
    if op == "top":
        return {"ok": True, "top": rows(board.top(10))}
    if op == "around":
        if not isinstance(player, str):
            return {"ok": False, "error": "around needs a player (string)"}
        return {"ok": True, "around": rows(board.around(player, 3, 3))}
    return {"ok": False, "error": f"unknown op {op!r} (score, top, around)"}


async def serve_client(
    board: AsyncLeaderboard, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Answer one connection's requests, in order, until it closes."""
    try:
        while line := await reader.readline():
            if len(line) > MAX_LINE:
                reply: dict[str, Any] = {"ok": False, "error": "request too long"}
            else:
                try:
                    reply = await answer(board, json.loads(line))
                except (ValueError, TypeError) as exc:  # bad JSON, or a write refused
                    reply = {"ok": False, "error": str(exc)}
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
    except (ConnectionError, ValueError):  # (ValueError: a line over the reader's 64 KiB)
        pass
    finally:
        writer.close()


async def start(board: AsyncLeaderboard, host: str, port: int) -> asyncio.Server:
    """Start serving ``board`` on ``host:port`` (0: any free port)."""
    return await asyncio.start_server(lambda r, w: serve_client(board, r, w), host, port)


async def main(directory: str, host: str, port: int) -> None:
    board = await AsyncLeaderboard.open(directory, fsync="always")
    async with board:
        server = await start(board, host, port)
        bound = server.sockets[0].getsockname()[1]
        print(f"serving {len(board)} players from {directory} on {host}:{bound}", flush=True)
        async with server:
            await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A small durable game-score server.")
    parser.add_argument("directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):  # (Ctrl-C stops it; the board closes)
        asyncio.run(main(args.directory, args.host, args.port))
