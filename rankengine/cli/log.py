"""Command-line tools for durable board directories.

``rankengine inspect DIR``
    Summary: members, events, segments, snapshot age, last sequence number.
``rankengine verify DIR``
    Reads every record and snapshot and says what it found.
``rankengine repair DIR``
    Cuts the log back to the last good record, saving what it cuts.
``rankengine replay DIR --until SEQ|TIME``
    Prints (or exports) the board as it was then.

Exit codes (all commands):

====  ==========================================================
0     success; for ``verify``: healthy
1     ``verify``: damaged (the board refuses to open; run repair),
      including a board whose ``MANIFEST`` was lost (repair rebuilds it);
      other commands: the operation failed (message on stderr)
2     bad arguments, or DIR is not a board directory (for ``verify`` and
      ``inspect``: it holds no ``MANIFEST`` and no snapshot or segment file;
      ``inspect`` describes a board whose ``MANIFEST`` was lost, as damaged;
      ``repair`` on a directory holding no board exits 1: nothing to repair from;
      the root of a periodic board, a window or a decayed board is named as
      such, with the board directories inside it to pass instead)
3     ``verify``: the board opens, with a warning: a torn tail (cut on
      the next open), or a damaged snapshot newer than every good one
      (open skips it for an older snapshot or the log from seq 1;
      ``repair`` moves it aside)
4     ``verify``: the board opens, but its retained history (kept with
      ``retain_log=True``: segments before the records it replays,
      snapshots older than the newest good one) is damaged, so a replay
      through it fails; ``repair`` leaves history as it is
130   interrupted (Ctrl-C): ``rankengine: interrupted`` on stderr
====  ==========================================================

When several apply, ``verify`` exits with the first of 1, 4, 3.

:func:`register` adds the commands to an ``argparse`` sub-parser set; each
sets ``handler``, a callable taking the parsed namespace and returning the
exit code.  ``python -m rankengine.cli.log`` runs them on their own.

>>> main(["verify", "/nonexistent/board"])
2
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import functools
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Final, TextIO

from rankengine.board.plain import int_text, plain_repr, to_json
from rankengine.cli.args import ArgumentParser, non_negative, output_path
from rankengine.cli.files import output_file
from rankengine.cli.ledger import (
    build_view,
    inspect_ledger,
    parse_options,
    replay_ledger,
    verify_ledger,
)
from rankengine.cli.main import interrupted, reader_gone
from rankengine.cli.roots import root_hint
from rankengine.durable.board import rebuild
from rankengine.durable.kinds import LEDGER, what_is_in
from rankengine.durable.manifest import MANIFEST_NAME, read_manifest
from rankengine.durable.records import LogError, RecoveryWarning
from rankengine.durable.repair import repair
from rankengine.durable.salvage import find
from rankengine.durable.salvage import records as count_records
from rankengine.durable.verify import Report, board_files, utc, verify

__all__ = ["main", "register"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_TORN: Final = 3
EXIT_HISTORY: Final = 4
#: Seconds between progress lines, so a progress display costs nothing.
PROGRESS_INTERVAL_S: Final = 0.2
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class _Progress:
    """Prints ``name: 42%`` on stderr (only when it is a terminal, or forced).

    Used as a context manager, it ends its line however the block ends, so
    an error or ``interrupted`` that follows starts on a line of its own.
    """

    def __init__(self, label: str, enabled: bool | None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.last = 0.0
        self.shown = False

    def __call__(self, name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < PROGRESS_INTERVAL_S:
            return
        self.last = now
        percent = 100 * done // total if total else 100
        sys.stderr.write(f"\r{self.label}: {name} {percent:3d}% ")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            self.shown = False

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.done()


def _board_dir(value: str) -> str:
    if not os.path.isdir(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a directory")
    return value


def _backup_dir(value: str) -> str:
    """``--backup-dir``: a directory, or a path that does not exist yet."""
    if os.path.lexists(value) and not os.path.isdir(value):
        raise argparse.ArgumentTypeError(f"{value!r} is a file, not a directory")
    return value


def _until(value: str) -> tuple[str, int]:
    """``--until``: a sequence number (ASCII digits) or an ISO 8601 time (UTC if naive)."""
    # isdigit() alone takes "\u0663" (Arabic-Indic 3), which int() reads as 3
    if value.isascii() and value.isdigit():
        return ("seq", int(value))
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a sequence number nor an ISO 8601 time "
            "(e.g. 2026-01-31T12:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    # exact integer milliseconds (rounded down): timestamp() * 1000 is a
    # float product that can land just below a whole millisecond
    return ("time", (moment - _EPOCH) // dt.timedelta(milliseconds=1))


def _age(ms: int) -> str:
    if not ms:
        return "-"
    seconds = max(0, time.time() - ms / 1000)
    stamp = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({seconds:.0f} s ago)"


def register(subparsers: Any) -> None:
    """Add ``inspect``, ``verify``, ``repair`` and ``replay`` to ``subparsers``
    (the object ``ArgumentParser.add_subparsers()`` returns)."""
    progress = argparse.ArgumentParser(add_help=False)
    progress.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress on stderr (default: when stderr is a terminal)",
    )
    p = subparsers.add_parser(
        "inspect",
        parents=[progress],
        help="summarise a board directory",
        description="Summarise a durable board directory: members, events, segments, "
        "snapshots and their age, last sequence number.  Reads every record.",
    )
    p.add_argument("dir", type=_board_dir, metavar="DIR", help="the board directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=functools.partial(run, _inspect), log_command="inspect")
    p = subparsers.add_parser(
        "verify",
        parents=[progress],
        help="check every record and snapshot",
        description="Check every frame, record and snapshot.  Exit 0: healthy; 1: damaged "
        "(the board refuses to open, see `repair`); 4: the board opens but its retained "
        "history is damaged (a replay from the log through it fails); 3: the board opens "
        "with a warning (a torn tail, which the next open cuts, or a damaged newest "
        "snapshot, which open skips for an older one; `repair` moves it aside); "
        "2: DIR is not a board.",
    )
    p.add_argument("dir", type=_board_dir, metavar="DIR", help="the board directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=functools.partial(run, _verify), log_command="verify")
    p = subparsers.add_parser(
        "repair",
        parents=[progress],
        help="cut the log back to its last good record",
        description="Keep everything before the first damage; move what is cut (segment "
        "tails, later segments, damaged snapshots, a damaged manifest) into a backup "
        "directory.  Stop every process using the board first.",
    )
    p.add_argument("dir", type=_board_dir, metavar="DIR", help="the board directory")
    p.add_argument(
        "--backup-dir",
        type=_backup_dir,
        metavar="BACKUP",
        help="where to save what is cut (default: DIR/repair-TIME)",
    )
    p.add_argument("--dry-run", action="store_true", help="only say what would be done")
    p.set_defaults(handler=functools.partial(run, _repair), log_command="repair")
    p = subparsers.add_parser(
        "replay",
        parents=[progress],
        help="show the board (or a ledger's views) as of a sequence number or a time",
        description="Rebuild the board as of --until (a sequence number, or an ISO 8601 "
        "time, UTC when no zone is given) and print or export it.  On a ledger, rebuild "
        "each view (or those named by --view) from the events and print its boards.  "
        "Read only.",
    )
    p.add_argument("dir", type=_board_dir, metavar="DIR", help="the board directory")
    p.add_argument(
        "--until",
        type=_until,
        metavar="SEQ|TIME",
        help="a sequence number, or an ISO 8601 time (default: the end of the log)",
    )
    p.add_argument("--from-log", action="store_true", help="ignore snapshots: replay from seq 1")
    p.add_argument(
        "--view",
        action="append",
        metavar="NAME",
        help="a ledger: the view to rebuild (repeat for several; default: every view)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "csv"),
        default="text",
        help="output format (default: %(default)s)",
    )
    p.add_argument(
        "--top",
        type=non_negative,
        default=None,
        metavar="N",
        help="only the N best entries (default: all)",
    )
    p.add_argument(
        "--output",
        "-o",
        type=output_path,
        metavar="FILE",
        help="write to FILE instead of stdout (replaced only once complete; '-': stdout)",
    )
    p.set_defaults(handler=functools.partial(run, _replay), log_command="replay")
    p = subparsers.add_parser(
        "add-view",
        parents=[progress],
        help="add a view to a ledger, built from its history",
        description="Register a view on the ledger in DIR and build it by replaying every "
        "event recorded so far (with a progress bar).  Stop the process using the ledger "
        'first.  Options as NAME=VALUE (JSON values: keep=2, where=\'{"region": "eu"}\').',
    )
    p.add_argument("dir", type=_board_dir, metavar="DIR", help="the ledger directory")
    p.add_argument("name", help="the view's name")
    p.add_argument("kind", help="board, periodic, window, decayed or topk")
    p.add_argument("options", nargs="*", metavar="NAME=VALUE", help="the view's options")
    p.set_defaults(handler=functools.partial(run, _add_view), log_command="add-view")


def _add_view(args: argparse.Namespace, out: TextIO) -> int:
    options = parse_options(args.options)
    with _Progress("add-view", args.progress) as bar:
        return build_view(args.dir, args.name, args.kind, options, bar)


def _report_json(report: Report) -> dict[str, Any]:
    return {
        "directory": report.directory,
        "healthy": report.healthy,
        "damaged": report.damaged,
        "history_damaged": report.history_damaged,
        "fallback": report.fallback,
        "torn": report.torn,
        "last_seq": report.last_seq,
        "findings": [f._asdict() for f in report.findings],
        "snapshots": [vars(s) for s in report.snapshots],
        "segments": [vars(s) for s in report.segments],
    }


def _inspect(args: argparse.Namespace, out: TextIO) -> int:
    with _Progress("inspect", args.progress) as bar:
        report = verify(args.dir, progress=bar)
    if what_is_in(args.dir) == LEDGER:
        return inspect_ledger(args.dir, report, args.json, out)
    manifest = report.manifest
    snap = next((s for s in reversed(report.snapshots) if s.ok), None)
    events = sum(s.records for s in report.segments)
    members: int | None = None  # unknown: the board does not open
    if not report.damaged:
        with warnings.catch_warnings():
            # what open would warn about (a torn tail, a skipped snapshot)
            # is among the findings printed below
            warnings.simplefilter("ignore", RecoveryWarning)
            members = len(rebuild(args.dir))
    info = {
        "directory": args.dir,
        "config": None if manifest is None else manifest.config,
        "members": members,
        "events_in_log": events,
        "last_seq": report.last_seq,
        "segments": [(s.name, s.seq, s.last_seq, s.size) for s in report.segments],
        "snapshot": None
        if snap is None
        else {"name": snap.name, "seq": snap.seq, "members": snap.count},
        "snapshot_written": _age(snap.created_ms) if snap else "-",
        "status": _status(report),
        "findings": [str(finding) for finding in report.findings],
    }
    if args.json:
        json.dump(info, out, indent=2, default=str)
        out.write("\n")
    else:
        out.write(f"directory   {args.dir}\n")
        out.write(f"config      {info['config']}\n")
        out.write(f"members     {'?' if members is None else members}\n")
        out.write(f"last seq    {report.last_seq}\n")
        out.write(f"events      {events} in {len(report.segments)} segment(s)\n")
        for name, first, last, size in info["segments"]:
            out.write(f"  {name}  seq {first}..{last}  {size} bytes\n")
        if snap is None:
            out.write("snapshot    none\n")
        else:
            out.write(f"snapshot    {snap.name}: {snap.count} members up to seq {snap.seq}, ")
            out.write(f"written {_age(snap.created_ms)}\n")
        out.write(f"status      {info['status']}\n")
        for finding in report.findings:
            out.write(f"  {finding}\n")
    return EXIT_OK


def _verify(args: argparse.Namespace, out: TextIO) -> int:
    with _Progress("verify", args.progress) as bar:
        report = verify(args.dir, progress=bar)
    if what_is_in(args.dir) == LEDGER:
        return verify_ledger(args.dir, report, args.json, out)
    if args.json:
        json.dump(_report_json(report), out, indent=2)
        out.write("\n")
        return report.exit_code
    snaps = sum(1 for s in report.snapshots if s.ok)
    records = sum(s.records for s in report.segments)
    out.write(
        f"checked {len(report.snapshots)} snapshot(s) ({snaps} good) and "
        f"{len(report.segments)} segment(s) ({records} records), last seq {report.last_seq}\n"
    )
    for finding in report.findings:
        out.write(f"{finding}\n")
    if report.damaged:
        out.write(
            "DAMAGED: the board will refuse to open; "
            "`rankengine repair DIR` keeps everything before the damage\n"
        )
    if report.history_damaged and not report.damaged:
        out.write(
            "HISTORY DAMAGED: the board opens, but its retained history is damaged: "
            "a replay through it (`replay --from-log`, or `replay --until` from a damaged "
            "older snapshot) fails or falls back\n"
        )
    if report.fallback and not report.damaged:
        out.write(
            "SNAPSHOT FALLBACK: the board opens, but skips its damaged newest snapshot(s) "
            "(with a RecoveryWarning) and replays more of the log from an older snapshot "
            "or from seq 1; `rankengine repair DIR` moves the damaged snapshot(s) aside\n"
        )
    if report.torn and not report.damaged:
        out.write("TORN TAIL: an interrupted last write; the next open cuts it (with a warning)\n")
    if not report.damaged and report.manifest is not None and _backups(args.dir):
        plan = find(args.dir)  # what earlier repairs set aside and no salvage replayed
        if plan.events:
            first, last = plan.events[0], plan.events[-1]
            out.write(
                f"SALVAGEABLE: {count_records(len(plan.events))} set aside by a repair are "
                f"not on the board (seq {first.seq}..{last.seq}, written {utc(first.time_ms)} to "
                f"{utc(last.time_ms)}): `rankengine salvage DIR` shows them\n"
            )
    if report.healthy:
        out.write("healthy\n")
    return report.exit_code


def _backups(directory: str) -> bool:
    """Whether ``directory`` holds a backup of an earlier repair."""
    return any(name.startswith("repair-") for name in os.listdir(directory))


def _status(report: Report) -> str:
    """One phrase for the state of a board directory."""
    if report.damaged:
        return "damaged"
    parts = ["history damaged"] if report.history_damaged else []
    parts += ["damaged snapshot skipped on open"] if report.fallback else []
    parts += ["torn tail"] if report.torn else []
    return ", ".join(parts) or "healthy"


def _repair(args: argparse.Namespace, out: TextIO) -> int:
    with _Progress("repair", args.progress) as bar:
        result = repair(args.dir, backup_dir=args.backup_dir, dry_run=args.dry_run, progress=bar)
    for finding in result.before.findings:
        out.write(f"found: {finding}\n")
    for note in result.notes:
        out.write(f"{note}\n")
    if args.dry_run:
        for action in result.actions:
            out.write(f"would {action}\n")
        if result.backup is not None:
            out.write(f"would save what it moves or cuts in {result.backup}\n")
        if result.actions:
            out.write("dry run: nothing was changed\n")
        return EXIT_OK
    for action in result.actions:
        out.write(f"{action}\n")
    if result.backup is not None:
        out.write(f"backup of everything cut: {result.backup}\n")
    if result.after is not None:
        state = _status(result.after)
        out.write(f"after repair: {state}, last seq {result.after.last_seq}\n")
        return EXIT_FAILED if result.after.damaged else EXIT_OK
    return EXIT_OK


def _replay(args: argparse.Namespace, out: TextIO) -> int:
    if what_is_in(args.dir) == LEDGER:
        return _replay_ledger(args, out)
    if args.view:
        raise ValueError(f"{args.dir} holds a board, not a ledger: --view is for a ledger")
    kind, value = args.until if args.until else ("seq", None)
    with _Progress("replay", args.progress) as bar:
        board = rebuild(
            args.dir,
            until_seq=value if kind == "seq" else None,
            until_ms=value if kind == "time" else None,
            from_log=args.from_log,
            progress=bar,
        )
    entries = board.top(len(board) if args.top is None else args.top, with_meta=True)
    if args.output not in (None, "-"):  # written whole or not at all: see rankengine.cli.files
        with output_file(args.output, newline="") as sink:
            _write_entries(entries, args.format, sink)
    else:
        _write_entries(entries, args.format, out)
    return EXIT_OK


def _replay_ledger(args: argparse.Namespace, out: TextIO) -> int:
    """``replay`` of a ledger: its views rebuilt from the log, each board printed."""
    if args.from_log:
        raise ValueError("a ledger's views are always replayed from its log: drop --from-log")
    with _Progress("replay", args.progress) as bar:
        boards = replay_ledger(args.dir, args.view, args.until, args.top, bar)
    many = len(boards) > 1 or boards[0][2] is not None
    if many and args.format != "text":
        raise ValueError(
            f"{args.dir}: {len(boards)} boards to print: --format {args.format} prints one "
            "(name an unkeyed view with --view)"
        )

    def write(sink: TextIO) -> None:
        for view, kind, key, rows in boards:
            if many:
                where = "" if key is None else f" [{key}]"
                sink.write(f"== view {view}{where} ({kind}) ==\n")
            _write_entries(rows, args.format, sink)

    if args.output not in (None, "-"):
        with output_file(args.output, newline="") as sink:
            write(sink)
    else:
        write(out)
    return EXIT_OK


def _text(value: Any) -> str:
    """A member or score as one CSV or text cell: ``bytes`` decoded (undecodable
    bytes as ``\\xNN``), a huge int in hexadecimal (see :mod:`rankengine.board.plain`)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if type(value) is int:
        return int_text(value)
    if isinstance(value, tuple):  # a composite score: written as a list, as before
        return plain_repr(list(value))
    return str(value)


def _write_entries(entries: list[Any], fmt: str, out: TextIO) -> None:
    if fmt == "json":
        for e in entries:
            row = {"rank": e.rank, "member": e.member, "score": e.score, "meta": e.meta}
            # allow_nan=False: strict JSON, never ``Infinity`` or ``NaN``
            out.write(json.dumps(to_json(row), allow_nan=False) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(["rank", "member", "score"])
        for e in entries:
            writer.writerow([e.rank, _text(e.member), _text(e.score)])
    else:
        for e in entries:
            out.write(f"{e.rank:>8}  {_text(e.member):<30} {plain_repr(e.score)}\n")


def _one_line_warning(command: str) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints ``rankengine COMMAND: warning:
    MESSAGE`` as one line on stderr, as the commands print their errors
    (Python's own adds the source file, the line number and a line of code)."""

    def show(message: Warning | str, *_details: object, **_more: object) -> None:
        sys.stderr.write(f"rankengine {command}: warning: {message}\n")

    return show


def run(
    command: Callable[[argparse.Namespace, TextIO], int],
    args: argparse.Namespace,
    out: TextIO | None = None,
) -> int:
    """Run one command on parsed ``args``; turn every expected failure into
    a message on stderr and an exit code (never a traceback)."""
    name = args.log_command
    try:
        # verify and inspect report a lost manifest as damage when the files
        # of a board are there (repair rebuilds it); repair says what it finds
        has_files = bool(board_files(args.dir))
        lost_manifest_ok = command is _repair or (command in (_verify, _inspect) and has_files)
        no_manifest = not os.path.exists(os.path.join(args.dir, MANIFEST_NAME))
        hint = root_hint(args.dir) if no_manifest and not has_files else None
        if hint is not None:  # a time board's root, or boards one level down
            sys.stderr.write(f"rankengine {name}: {args.dir} is not a board directory: {hint}\n")
            return EXIT_FAILED if command is _repair else EXIT_USAGE
        if not lost_manifest_ok and no_manifest:
            try:
                read_manifest(args.dir)  # raises FileNotFoundError with the path
            except FileNotFoundError as exc:
                sys.stderr.write(
                    f"rankengine {name}: {args.dir} is not a board directory ({exc})\n"
                )
                return EXIT_USAGE
        # a file missing from here on (an output folder, a segment removed
        # while reading) is a failure of the command, not a wrong DIR
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning(name)
            return command(args, out or sys.stdout)
    except BrokenPipeError:
        raise  # the reader of stdout left: not a failure (the caller exits quietly)
    except (LogError, OSError, ValueError) as exc:
        sys.stderr.write(f"rankengine {name}: {exc}\n")
        return EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run one command; return the exit code."""
    parser = ArgumentParser(prog="rankengine", description="Durable board tools.")
    register(parser.add_subparsers(required=True, metavar="COMMAND"))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage message
        return int(exc.code or 0)
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        return reader_gone()
    except KeyboardInterrupt:
        return interrupted()


if __name__ == "__main__":
    sys.exit(main())
