"""``rankengine trending``: the approximate top K of a stream of lines or words.

Reads a file (or standard input when FILE is ``-`` or absent), counts
every line (or, with ``--words``, every word) in a
:class:`~rankengine.trending.topk.TopK` tracker -- a count-min sketch plus exact
counters for the current candidates, in fixed memory however many distinct
keys arrive -- and prints the top list: at the end, every ``--every N``
keys, and on a terminal refreshed in place while it reads.

Each count is an upper bound: the true count is between ``count - error``
and ``count`` (``error`` is what the key may have inherited from the
sketch when it became a candidate; 0 means exact).

``--k`` is at most :data:`MAX_K` (100,000): the tracker keeps up to 2k
exact counters, so a larger k would give up the fixed memory.

Exit codes: 0 success; 1 FILE cannot be read, or the stream passed the
counters' limit; 2 bad arguments (``--k`` above the limit included, refused
before anything is read); 130 interrupted (Ctrl-C).  After 1 (at
the limit) or 130 the list so far is still printed, and stderr says why
the count stopped.  FILE and standard input are both read as UTF-8, whatever
the locale (a byte order mark at the start is dropped); undecodable bytes
are read as U+FFFD, never an error.

>>> import io
>>> out = io.StringIO()
>>> run(io.StringIO("a b a\\nc a b\\n"), out, k=2, words=True)
0
>>> print(out.getvalue().rstrip())
Top 2 of 6 words (count-min sketch 2048 x 4, 18 exact counters)
rank  count  error  key
   1      3      0  a
   2      2      0  b
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, Final, TextIO

from rankengine.cli.args import HelpFormatter, positive
from rankengine.cli.main import EXIT_INTERRUPTED
from rankengine.durable.manifest import ctrl_c_held
from rankengine.trending.topk import TopK

__all__ = ["register", "run"]

#: A word: a run of letters, digits and underscores (Unicode-aware).
WORD: Final = re.compile(r"\w+")
#: Keys counted between two updates of the tracker (one ``add_many``).
BATCH: Final = 4096
#: On a terminal, seconds between two redraws when ``--every`` is not given.
REFRESH_S: Final = 0.25
#: Longest key shown; longer ones are cut with an ellipsis.
KEY_WIDTH: Final = 60
#: Sketch counter width.  32-bit counters stop at 2**32 - 1 keys, which a
#: busy log passes in days; 64-bit ones double the sketch's memory (64 KiB at
#: 2048 x 4) and stop at 2**64 - 1, centuries of lines at any rate a pipe
#: delivers.
COUNTER_BITS: Final = 64
#: Largest ``--k``.  TopK itself takes any k, and keeps up to 2k candidates
#: with an exact counter each (about half a KiB apiece in CPython), so its
#: memory is fixed only by k: 100,000 bounds it near 100 MB, and a top list
#: longer than that is no longer read on a terminal.  A larger k (a typo,
#: --k 10**12) would make the memory grow with every distinct key.
MAX_K: Final = 100_000


def register(sub: Any) -> None:
    """Add the ``trending`` subcommand to an argparse subparsers object."""
    p = sub.add_parser(
        "trending",
        help="approximate top K of the lines or words of a file or stdin",
        description="Count the lines (or words) of FILE, or of standard input, in a "
        "fixed-memory approximate top-K tracker (count-min sketch + heavy-hitter "
        "candidates) and print the top list; on a terminal it is refreshed while reading.  "
        "A count is an upper bound: the true count is between count - error and count.",
        epilog="examples:\n  rankengine trending access.log --k 20\n"
        "  cat book.txt | rankengine trending --words --lower --every 10000",
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "file",
        nargs="?",
        default="-",
        metavar="FILE",
        help="text to read, as UTF-8 ('-' or absent: stdin)",
    )
    p.add_argument(
        "--k",
        type=_k,
        default=10,
        help=f"how many keys to show, 1 to {MAX_K:,} (default: %(default)s)",
    )
    p.add_argument(
        "--words",
        action="store_true",
        help="count words (runs of letters, digits and _) instead of whole lines",
    )
    p.add_argument("--lower", action="store_true", help="fold keys to lower case first")
    p.add_argument(
        "--every",
        type=positive,
        metavar="N",
        help="print the top list every N keys (in place on a terminal)",
    )
    p.set_defaults(handler=_handle)


def _k(text: str) -> int:
    value = positive(text)
    if value > MAX_K:
        raise argparse.ArgumentTypeError(
            f"must be from 1 to {MAX_K:,} (up to 2k exact counters are kept), got {value:,}"
        )
    return value


def _handle(args: argparse.Namespace) -> int:
    out = sys.stdout
    live = out.isatty() and os.environ.get("TERM") != "dumb"
    options: dict[str, Any] = {
        "k": args.k,
        "words": args.words,
        "lower": args.lower,
        "every": args.every,
        "live": live,
    }
    if args.file == "-":
        if sys.stdin is None:  # started with stdin closed (cmd <&-)
            raise ValueError("standard input is closed: give FILE, or pipe text in")
        if isinstance(sys.stdin, io.TextIOWrapper):
            # as a FILE is read: UTF-8 whatever the locale, so the same
            # bytes make the same keys from a pipe as from a file
            sys.stdin.reconfigure(encoding="utf-8-sig", errors="replace")
        return run(sys.stdin, out, **options)
    with open(args.file, encoding="utf-8-sig", errors="replace") as stream:
        return run(stream, out, **options)


def _keys(lines: Iterable[str], words: bool, lower: bool) -> Iterator[str]:
    for line in lines:
        if lower:
            line = line.lower()  # noqa: PLW2901 - the line is only read
        if words:
            yield from WORD.findall(line)
        else:
            key = line.rstrip("\r\n")
            if key.strip():
                yield key


def _show(key: str) -> str:
    text = key if key.isprintable() else repr(key)
    return text if len(text) <= KEY_WIDTH else text[: KEY_WIDTH - 3] + "..."


def table(tracker: TopK, k: int, unit: str) -> list[str]:
    """The top list as lines of text."""
    items = tracker.top(k)
    width = max([5, *(len(f"{item.count:,}") for item in items)])
    config = tracker.config()
    lines = [
        f"Top {k} of {tracker.total:,} {unit.removesuffix('s') if tracker.total == 1 else unit} "
        f"(count-min sketch {config['width']} x "
        f"{config['depth']}, {tracker.capacity} exact counters)",
        f"rank  {'count':>{width}}  error  key",
    ]
    lines += [
        f"{i:>4}  {item.count:>{width},}  {item.error:>5,}  {_show(str(item.key))}"
        for i, item in enumerate(items, 1)
    ]
    if any(item.error for item in items):
        lines.append(
            "(a count is an upper bound: the true count is between count - error and count)"
        )
    return lines


def run(
    stream: Iterable[str],
    out: TextIO,
    *,
    k: int = 10,
    words: bool = False,
    lower: bool = False,
    every: int | None = None,
    live: bool = False,
) -> int:
    """Count the keys of ``stream`` and print the top ``k`` to ``out``.

    :param k: how many keys to show, 1 to :data:`MAX_K` (``ValueError``
        otherwise, before anything is read).
    :param every: also print the list every ``every`` keys.
    :param live: redraw the list in place (a terminal) instead of printing
        it again; without ``every``, redraw about four times a second.
    :return: the exit code: 0, 130 when interrupted (Ctrl-C), or 1 past
        the counter limit; either way the list so far is printed, and a
        one-line message on stderr says why it stopped.
    """
    if type(k) is not int or not 1 <= k <= MAX_K:
        raise ValueError(f"k must be an int from 1 to {MAX_K:,}, got {k!r}")
    tracker = TopK(k=k, counter_bits=COUNTER_BITS)
    unit = "words" if words else "lines"
    batch: list[str] = []
    shown = 0  # lines of the live block on screen
    next_print = every or 0
    next_redraw = time.monotonic() + REFRESH_S
    seen = 0

    def draw() -> None:
        nonlocal shown
        lines = table(tracker, k, unit)
        if live:
            up = f"\x1b[{shown}F" if shown else ""
            # \x1b[J: clear below, where a longer list left its last lines
            out.write(up + "".join(f"\x1b[2K{line}\n" for line in lines) + "\x1b[J")
            shown = len(lines)
        else:
            out.write("\n".join(lines) + "\n\n")
        out.flush()

    code = 0
    try:
        try:
            for key in _keys(stream, words, lower):
                batch.append(key)
                seen += 1
                if len(batch) >= BATCH or (every and seen >= next_print):
                    # Ctrl-C waits for the batch: one cut short would be
                    # counted again after the loop (in part twice)
                    with ctrl_c_held():
                        tracker.add_many(batch)
                        batch.clear()
                    if every and seen >= next_print:
                        next_print += every
                        draw()
                    elif live and not every and time.monotonic() >= next_redraw:
                        next_redraw = time.monotonic() + REFRESH_S
                        draw()
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        tracker.add_many(batch)
    except OverflowError as exc:  # past the counter limit: the batch was not added
        code = 1
        counted = seen - len(batch)
        print(f"rankengine trending: stopped after {counted:,} {unit}: {exc}", file=sys.stderr)
    if live and shown:
        draw()  # the final list replaces the live one
    else:
        out.write("\n".join(table(tracker, k, unit)) + "\n")
    out.flush()
    if code == EXIT_INTERRUPTED:
        print("rankengine trending: interrupted", file=sys.stderr)
    return code


if __name__ == "__main__":
    from rankengine.cli.main import main

    sys.exit(main(["trending", *sys.argv[1:]]))
