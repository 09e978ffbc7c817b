"""``rankengine forget DIR MEMBER``: forget a member in a board's directory.

``DIR`` is a board directory, the root of a durable periodic board, a
sliding window or a decayed board, or a ledger's directory (the member
leaves every view and every file: :mod:`rankengine.ledger.forget`); no process may have it open (the
command takes its lock, as an open does).  The member is removed and every
file under ``DIR`` is rewritten without them (see
:mod:`rankengine.durable.forget`).  ``MEMBER`` is a string; ``--int`` reads
it as an integer member and ``--hex`` as bytes written in hexadecimal, the
three kinds a board stores (``"7"``, ``7`` and ``b"7"`` are three members).

Exit codes: 0 done (also when there was no trace of the member: the output
says so), 1 the forget failed and changed nothing (message on stderr),
2 bad arguments or ``DIR`` holds no board.

>>> import tempfile
>>> from rankengine import Leaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Leaderboard.open(tmp) as board:
...         _ = board.set("ann", 5)
...     main(["forget", tmp, "ann"])  # doctest: +ELLIPSIS
forgot 'ann' in ...: removed from the board; rewrote 1 file(s) (1 record(s), 0 ...)
0
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Final

from rankengine.board.plain import plain_repr
from rankengine.cli.args import ArgumentParser
from rankengine.cli.roots import EPOCH_PREFIX, PERIODS_DIR
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.forget import Forgotten
from rankengine.durable.kinds import LEDGER, what_is_in
from rankengine.durable.manifest import MANIFEST_NAME
from rankengine.durable.records import LogError
from rankengine.ledger.ledger import Ledger
from rankengine.timed.forget import forget_decayed_root, forget_periodic_root

__all__ = ["forget_directory", "main", "register"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


def _forget_board(path: str, member: Any) -> Forgotten:
    with DurableLeaderboard(path, create=False, fsync="always", compact_min_bytes=None) as board:
        return board.forget(member)


def _forget_ledger(path: str, member: Any) -> Forgotten:
    with Ledger.open(path, create=False, fsync="always", compact_min_bytes=None) as ledger:
        return ledger.forget(member)


def forget_directory(path: str, member: Any) -> Forgotten | None:
    """Forget ``member`` in ``path``, whichever kind of board it holds;
    None when it holds none.

    Runtime complexity: O(size of the files under path)
    """
    forget: Callable[[str, Any], Forgotten]
    if what_is_in(path) == LEDGER:
        forget = _forget_ledger
    elif os.path.exists(os.path.join(path, MANIFEST_NAME)):
        forget = _forget_board
    elif os.path.isdir(os.path.join(path, PERIODS_DIR)):
        forget = forget_periodic_root
    elif any(name.startswith(EPOCH_PREFIX) for name in os.listdir(path)):
        forget = forget_decayed_root
    else:
        return None
    return forget(path, member)


def _member(args: argparse.Namespace) -> Any:
    text: str = args.member
    if args.int:
        try:
            return int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--int: {text!r} is not an integer") from None
    if args.hex:
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--hex: {text!r} is not hexadecimal") from None
    return text


def _say(path: str, member: Any, done: Forgotten) -> str:
    name = plain_repr(member)
    if not (done.present or done.files):
        return f"no trace of {name} in {path}: nothing changed"
    where = "removed from the board" if done.present else "not on the board"
    return (
        f"forgot {name} in {path}: {where}; rewrote {done.files} file(s) "
        f"({done.records} record(s), {done.rows} snapshot or archive row(s))"
    )


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        member = _member(args)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    if not os.path.isdir(args.dir):
        sys.stderr.write(f"rankengine forget: {args.dir!r} is not a directory\n")
        return EXIT_USAGE
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            done = forget_directory(args.dir, member)
    except (LogError, OSError, ValueError, TypeError) as exc:
        sys.stderr.write(f"rankengine forget: {exc}\n")
        return EXIT_FAILED
    if done is None:
        sys.stderr.write(
            f"rankengine forget: {args.dir} holds no board (no {MANIFEST_NAME}, no "
            f"{PERIODS_DIR}/, no {EPOCH_PREFIX}<t0>/)\n"
        )
        return EXIT_USAGE
    print(_say(args.dir, member, done))
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``forget`` to ``subparsers``."""
    p = subparsers.add_parser(
        "forget",
        help="remove a member and every trace of them from a board's files",
        description="Remove MEMBER from the board in DIR (a board directory, or the root "
        "of a periodic board, a sliding window or a decayed board) and rewrite its log, "
        "snapshots and archives without them, crash-safely.  Other members' history is "
        "unchanged.  Stop every process using the board first.",
    )
    p.add_argument("dir", metavar="DIR", help="the board directory or root")
    p.add_argument("member", metavar="MEMBER", help="the member (a string by default)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--int", action="store_true", help="MEMBER is an integer member")
    kind.add_argument("--hex", action="store_true", help="MEMBER is a bytes member, in hex")
    p.set_defaults(handler=functools.partial(_run, p))


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (``forget DIR MEMBER``) and run it; return the exit code."""
    parser = ArgumentParser(prog="rankengine", description="Forget a member.")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)
