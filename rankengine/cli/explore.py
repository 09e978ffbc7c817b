"""``rankengine explore``: the skip-list explorer, as one HTML file or served.

``rankengine explore [SCORE ...] [--do OP ...] [-o FILE]``
    Writes one self-contained page (inline script and style, nothing
    fetched: it opens from a USB stick with the network off) holding the
    board, the operations given with ``--do`` and a set of prepared
    scenarios, each narrated step by step, with the same operation on the
    sorted-list backend beside it; plus boards pre-generated for other
    values of ``p`` and the max level.
``rankengine explore --serve [--port N]``
    Serves the page on 127.0.0.1 with a live board behind it: operations
    typed in the page run on the real skip list and come back narrated.

The page computes nothing about the list: it draws what
:mod:`rankengine.teach.explore` exports.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from rankengine.cli.args import HelpFormatter, output_path, whole_number
from rankengine.cli.files import output_file
from rankengine.cli.viz import parse_entry, parse_number
from rankengine.index.skiplist import MAX_LEVEL, P
from rankengine.teach.explore import DEFAULT_SIZE, MAX_SIZE, Explorer
from rankengine.teach.explore_data import board_data, parse_op, static_data
from rankengine.teach.explore_page import page_html

__all__ = ["make_server", "read_board", "register"]

#: Seed of the heights (and random scores) when none is given.
DEFAULT_SEED: Final = 7
#: Where the page is written when no ``-o`` is given.
DEFAULT_OUTPUT: Final = "skiplist-explorer.html"
#: A page heavier than this gets a note (the issue's budget for a USB stick page).
PAGE_BUDGET: Final = 300_000
#: The largest request body the server reads (an operation is a few dozen bytes).
MAX_BODY: Final = 4096


def register(sub: Any) -> None:
    """Add ``explore`` to an argparse subparsers object."""
    p = sub.add_parser(
        "explore",
        help="write (or serve) an interactive skip-list explorer page",
        description="Write one self-contained HTML page that steps through operations on a "
        "real skip list (insert, delete, search, score change, rank of a member, entry at a "
        "rank), drawn from the library's own narration, with the same operation on the "
        "sorted-list backend beside it.  With --serve, serve it on 127.0.0.1 with a live "
        "board behind it.",
        epilog="examples:\n  rankengine explore 30 10 50 20 60 5 40 15 25 45 --seed 8 "
        "--do 'insert 35@3' --do 'delete 25'\n  rankengine explore --random 20 -o lesson.html\n"
        "  rankengine explore --serve --port 8000",
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "scores",
        nargs="*",
        type=parse_entry,
        metavar="SCORE",
        help=f"scores to insert, in this order: 42, 7.5 or NAME=SCORE (default: "
        f"{DEFAULT_SIZE} random scores)",
    )
    p.add_argument("--random", type=_count, metavar="N", help="N random distinct scores instead")
    p.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="read the board from FILE: a JSON object {name: score}, or lines 'name,score' "
        "(or 'name score')",
    )
    p.add_argument(
        "--seed",
        type=whole_number,
        default=DEFAULT_SEED,
        help="seed of the node heights and random scores (default: %(default)s)",
    )
    p.add_argument(
        "--p",
        type=_probability,
        default=P,
        metavar="P",
        help="level probability of the heights (default: %(default)s, as SkipList)",
    )
    p.add_argument(
        "--max-level",
        type=_max_level,
        default=MAX_LEVEL,
        metavar="L",
        help=f"highest node height, 1 to {MAX_LEVEL} (default: %(default)s)",
    )
    p.add_argument(
        "--do",
        action="append",
        default=[],
        type=_operation,
        metavar="OP",
        help="record an operation: 'insert 35', 'insert ann=35@3' (height 3), 'delete 25', "
        "'search 45', 'update 40 48', 'rank ann', 'at 7' (repeatable)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=output_path,
        metavar="FILE",
        help=f"the page to write (default: {DEFAULT_OUTPUT}; with --serve, none)",
    )
    p.add_argument(
        "--json",
        type=output_path,
        metavar="FILE",
        help="also write the page's data (boards, operations, frames) as JSON",
    )
    p.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1")
    p.add_argument(
        "--port",
        type=whole_number,
        default=8000,
        help="port for --serve; 0 picks a free one (default: %(default)s)",
    )
    p.set_defaults(handler=functools.partial(_explore, p))


def _count(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_SIZE}, got {value}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _max_level(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= MAX_LEVEL:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_LEVEL}, got {value}")
    return value


def _operation(text: str) -> dict[str, Any]:
    try:
        return parse_op(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _board(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Explorer:
    entries: list[tuple[str | None, int | float]] = args.scores
    given = [bool(entries), args.random is not None, args.source is not None]
    if sum(given) > 1:
        parser.error("give scores, --random N or --from FILE, not two of them")
    if args.source is not None:
        entries = read_board(args.source)
    settings = {"p": args.p, "max_level": args.max_level, "seed": args.seed}
    if not entries:
        return Explorer.random(args.random or DEFAULT_SIZE, **settings)
    if len(entries) > MAX_SIZE:
        parser.error(f"at most {MAX_SIZE} scores")
    names = [name for name, _ in entries]
    members = None
    if any(name is not None for name in names):
        members = [name if name is not None else f"s{i}" for i, name in enumerate(names)]
        if len(set(members)) != len(members):
            parser.error("every NAME must be different")
    return Explorer([score for _, score in entries], members=members, **settings)


def read_board(path: str) -> list[tuple[str | None, int | float]]:
    """``(name, score)`` pairs from a JSON object ``{name: score}`` or from
    lines ``name,score`` / ``name score`` (blank lines and ``#`` comments
    skipped).

    Runtime complexity: O(size of the file)

    :raises ValueError: for a score that is not a finite number, a name
        given twice, or a file in neither form.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pairs: list[tuple[str, Any]] = []
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        pairs = [(str(name), score) for name, score in data.items()]
    else:
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, score = line.replace(",", " ").rpartition(" ")
            if not sep or not name.strip():
                raise ValueError(f"{path}:{number}: expected 'name,score', got {line!r}")
            pairs.append((name.strip(), score.strip()))
    out: list[tuple[str | None, int | float]] = []
    for name, score in pairs:
        try:
            value = parse_number(str(score))
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"{path}: {name}: {exc}") from None
        out.append((name, value))
    names = [name for name, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a name appears twice")
    return out


def _explore(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    explorer = _board(parser, args)
    if args.serve:
        server = make_server(explorer, args.do, port=args.port)
        if args.output is not None:
            _write(args.output, static_data(_board(parser, args), args.do))
        port = server.server_address[1]
        print(f"Serving the skip-list explorer on http://127.0.0.1:{port}/ (Ctrl-C stops it)")
        sys.stdout.flush()
        try:
            server.serve_forever()
        finally:
            server.server_close()
        return 0
    path = args.output or DEFAULT_OUTPUT
    data = static_data(explorer, args.do)
    if args.json is not None:
        with output_file(args.json) as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    size = _write(path, data)
    print(f"Explorer written to {path} ({size:,} bytes); open it in a browser.")
    if size > PAGE_BUDGET:
        print(
            f"(over {PAGE_BUDGET // 1000} KB: fewer entries or --do operations make a lighter page)"
        )
    return 0


def _write(path: str, data: dict[str, Any]) -> int:
    html = page_html(data)
    with output_file(path) as f:
        f.write(html)
    return len(html.encode())


# ----------------------------------------------------------------------
# The live server
# ----------------------------------------------------------------------


class _Live:
    """The board behind a served page, one operation at a time."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.lock = threading.Lock()

    def op(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            return self.explorer.run(body)

    def board(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            old = self.explorer
            scores = [p for p, _, _ in old.sl]
            members = [m for _, _, m in old.sl] if old.label == "member" else None
            self.explorer = Explorer(
                scores,
                members=members,
                p=body.get("p", old.p),
                max_level=body.get("max_level", old.max_level),
                seed=body.get("seed", old.seed),
            )
            return board_data(self.explorer, (), full=False)


def make_server(
    explorer: Explorer, ops: list[dict[str, Any]] | tuple[()] = (), *, port: int = 0
) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: a free one) for the page of a
    live board: ``GET /`` the page (``ops`` and the scenarios already
    run), ``POST /api/op`` one operation, ``POST /api/board`` a new board
    with ``p``/``max_level``; errors come back as ``{"error": ...}`` with
    status 400 and change nothing.  Call ``serve_forever()`` on it.

    Runtime complexity: O(N * level) per operation served
    """
    first = board_data(explorer, ops)
    live = _Live(explorer)
    choices = {
        "p": sorted({explorer.p, 0.5, 0.25, 0.125}, reverse=True),
        "max_level": sorted({explorer.max_level, 3, 4, 8, MAX_LEVEL}),
    }
    page = page_html({"live": True, "boards": [first], "choices": choices}).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the terminal shows the URL, not every request

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path in ("/", "/index.html"):
                self._send(200, page, "text/html; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain")

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length", "0"))
                if not 0 <= length <= MAX_BODY:
                    raise ValueError("request too large")
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("expected a JSON object")
                if self.path == "/api/op":
                    out = live.op(body)
                elif self.path == "/api/board":
                    out = live.board(body)
                else:
                    self._send(404, b'{"error":"not found"}', "application/json")
                    return
            except (ValueError, KeyError, TypeError) as exc:
                message = json.dumps({"error": str(exc)}).encode()
                self._send(400, message, "application/json")
                return
            self._send(200, json.dumps(out).encode(), "application/json")

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)
