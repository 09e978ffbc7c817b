"""``rankengine show`` and ``rankengine trace``: the skip list, drawn.

Both build a small skip list by inserting scores one by one (given on the
command line, as ``SCORE`` or ``NAME=SCORE``, or drawn at random), with
node heights drawn from ``--seed``, so the same command always draws the
same picture.

``rankengine show [SCORE ...]``
    The levels, links and spans.
``rankengine trace [SCORE ...] --find S | --rank R | --insert S | --delete S | --update OLD NEW``
    A search (its path, drops, and the rank summed from spans, step by
    step), or the narration of an insert, a delete or a score change (for
    an increase that moves the node, the finger search from the old
    ``update[]`` nodes that ``SkipList.move`` runs).

``--svg FILE`` also writes the picture as a self-contained SVG file.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import textwrap
from typing import Any, Final

from rankengine.cli.args import HelpFormatter, output_path, positive, whole_number
from rankengine.cli.files import output_file
from rankengine.index.skiplist import MAX_LEVEL, P, SkipList
from rankengine.teach.narrate import narrate_delete, narrate_insert, narrate_update
from rankengine.teach.svg import counted, render_svg
from rankengine.teach.trace import explain, trace_key, trace_rank
from rankengine.teach.viz import (
    DEFAULT_WIDTH,
    HeightScript,
    random_scores,
    render_text,
    shape_of,
    teaching_list,
)

__all__ = [
    "parse_entry",
    "parse_number",
    "register",
]

#: Random scores drawn when none are given.
DEFAULT_COUNT: Final = 12
#: Seed of the heights (and random scores) when none is given.
DEFAULT_SEED: Final = 7
#: Most random scores ``--random`` draws: the pictures are for small lists.
MAX_RANDOM: Final = 1000


def register(sub: Any) -> None:
    """Add ``show`` and ``trace`` to an argparse subparsers object."""
    board = argparse.ArgumentParser(add_help=False)
    board.add_argument(
        "scores",
        nargs="*",
        type=parse_entry,
        metavar="SCORE",
        help="scores to insert, in this order: 42, 7.5 or NAME=SCORE "
        f"(default: {DEFAULT_COUNT} random scores)",
    )
    board.add_argument(
        "--random",
        type=_count,
        metavar="N",
        help=f"insert N random distinct scores instead (1 to {MAX_RANDOM})",
    )
    board.add_argument(
        "--seed",
        type=whole_number,
        default=DEFAULT_SEED,
        help="seed of the node heights and random scores (default: %(default)s)",
    )
    board.add_argument(
        "--max-level",
        type=_max_level,
        default=MAX_LEVEL,
        metavar="L",
        help=f"highest node height, 1 to {MAX_LEVEL} (default: %(default)s)",
    )
    board.add_argument(
        "--label",
        choices=("score", "member", "key"),
        default="score",
        help="node labels: the score, the member name, or score/tie (default: score)",
    )
    board.add_argument(
        "--layout",
        choices=("auto", "horizontal", "vertical"),
        default="auto",
        help="levels as lines (horizontal) or columns (vertical); auto: horizontal "
        "when it fits in --width (default: %(default)s)",
    )
    board.add_argument(
        "--width",
        type=positive,
        default=DEFAULT_WIDTH,
        help="widest horizontal picture for --layout auto (default: %(default)s)",
    )
    board.add_argument("--no-legend", action="store_true", help="leave out the legend")
    board.add_argument(
        "--svg",
        type=output_path,
        metavar="FILE",
        help="also write the picture as an SVG file (replaced only once complete)",
    )

    p = sub.add_parser(
        "show",
        parents=[board],
        help="draw a small skip list: levels, links and spans",
        description="Insert scores one by one into a skip list and draw its levels, links "
        "and spans (the number on a link: how many level-0 steps it jumps).",
        epilog="examples:\n  rankengine show 30 10 50 20 40\n"
        "  rankengine show --random 20 --seed 3 --svg list.svg",
        formatter_class=HelpFormatter,
    )
    p.set_defaults(handler=functools.partial(_show, p))

    p = sub.add_parser(
        "trace",
        parents=[board],
        help="follow a search, an insert, a delete or a score change, step by step",
        description="Build the same list as `show`, then draw the path of a search (the "
        "links crossed, where it drops a level, the rank summed from spans) or narrate an "
        "insert, a delete or a score change: update[] and rank[] on each level and every "
        "span that changes, and why (a score increase that moves the node: the finger search "
        "for its new place from the old update[]).",
        epilog="examples:\n  rankengine trace 30 10 50 20 40 --find 40\n"
        "  rankengine trace --insert 35 --height 3\n  rankengine trace --update 20 45",
        formatter_class=HelpFormatter,
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--find", type=parse_number, metavar="SCORE", help="search for a score")
    what.add_argument(
        "--rank", type=positive, metavar="R", help="find the entry at rank R (1 = lowest)"
    )
    what.add_argument(
        "--insert", type=parse_entry, metavar="SCORE", help="insert a score (or NAME=SCORE)"
    )
    what.add_argument("--delete", type=parse_number, metavar="SCORE", help="delete a score")
    what.add_argument(
        "--update",
        type=parse_number,
        nargs=2,
        metavar=("OLD", "NEW"),
        help="change a score from OLD to NEW",
    )
    p.add_argument(
        "--height",
        type=positive,
        metavar="H",
        help="with --insert: give the new node this height instead of drawing it",
    )
    p.set_defaults(handler=functools.partial(_trace, p))


# ----------------------------------------------------------------------
# Argument types
# ----------------------------------------------------------------------


def parse_number(text: str) -> int | float:
    if not text.isascii():  # int() and float() read "\u0663" (Arabic-Indic 3) as 3
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def parse_entry(text: str) -> tuple[str | None, int | float]:
    name, sep, score = text.rpartition("=")
    if not sep:
        return (None, parse_number(text))
    if not name:
        raise argparse.ArgumentTypeError(f"{text!r}: the name before '=' is empty")
    return (name, parse_number(score))


def _count(text: str) -> int:
    value = positive(text)
    if value > MAX_RANDOM:
        raise argparse.ArgumentTypeError(f"at most {MAX_RANDOM} (pictures are for small lists)")
    return value


def _max_level(text: str) -> int:
    value = positive(text)
    if value > MAX_LEVEL:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_LEVEL}, got {value}")
    return value


# ----------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------


def _build(
    parser: argparse.ArgumentParser, args: argparse.Namespace, rng: HeightScript
) -> SkipList:
    """The list the arguments describe; arguments that contradict each other
    are usage errors (exit status 2), as argparse's own are."""
    entries: list[tuple[str | None, int | float]] = args.scores
    if entries and args.random is not None:
        parser.error("give scores or --random N, not both")
    if not entries:
        entries = [(None, s) for s in random_scores(args.random or DEFAULT_COUNT, args.seed)]
    names = [name for name, _ in entries]
    members = [name if name is not None else f"s{i}" for i, name in enumerate(names)]
    if len(set(members)) != len(members):
        parser.error("every NAME must be different")
    return teaching_list(
        [score for _, score in entries], rng=rng, max_level=args.max_level, members=members
    )


def _summary(sl: SkipList, args: argparse.Namespace) -> str:
    return textwrap.fill(
        f"A skip list of {counted(len(sl), 'entry', 'entries')} on "
        f"{counted(sl.level, 'level', 'levels')} (P = {P}, heights drawn "
        f"with seed {args.seed}, max level {args.max_level}).  Rank 1 is the lowest score.",
        88,
    )


def _write_svg(path: str | None, svg: str) -> None:
    """Write the SVG before anything is printed: a bad path fails alone."""
    if path is not None:
        with output_file(path) as f:
            f.write(svg)


def _svg_written(path: str | None) -> None:
    if path is not None:
        print(f"\nSVG written to {path}")


def _show(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    sl = _build(parser, args, HeightScript(args.seed, max_level=args.max_level))
    shape = shape_of(sl, args.label)
    _write_svg(args.svg, render_svg(shape))
    print(_summary(sl, args))
    print()
    print(render_text(shape, layout=args.layout, width=args.width, legend=not args.no_legend))
    _svg_written(args.svg)
    return 0


def _trace(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.height is not None and args.insert is None:
        parser.error("--height only applies to --insert")
    if args.height is not None and args.height > args.max_level:
        parser.error(f"--height must not exceed --max-level ({args.max_level})")
    rng = HeightScript(args.seed, max_level=args.max_level)
    sl = _build(parser, args, rng)
    member: str | None = None
    if args.insert is not None:
        # named as _build names the entries: each name labels one node
        member = args.insert[0] or f"s{len(sl)}"
        if any(m == member for _, _, m in sl):
            parser.error(f"every NAME must be different ({member!r} is in the list)")
    layout, width = args.layout, args.width
    if args.find is not None or args.rank is not None:
        shape = shape_of(sl, args.label)
        if args.rank is not None:
            if args.rank > len(sl):
                raise ValueError(f"--rank must be from 1 to {len(sl)}, got {args.rank}")
            trace = trace_rank(shape, args.rank)
        else:
            trace = trace_key(shape, args.find)
        _write_svg(args.svg, render_svg(shape, trace))
        print(_summary(sl, args))
        print()
        print(render_text(shape, trace, layout=layout, width=width, legend=not args.no_legend))
        print()
        print(explain(trace, shape))
        _svg_written(args.svg)
        return 0
    style: dict[str, Any] = {"label": args.label, "layout": layout, "width": width}
    summary = _summary(sl, args)  # the list before the operation, as the story starts
    if args.insert is not None:
        score = args.insert[1]
        story = narrate_insert(sl, score, member=member, height=args.height, rng=rng, **style)
    elif args.delete is not None:
        story = narrate_delete(sl, args.delete, **style)
    else:
        old, new = args.update
        story = narrate_update(sl, old, new, **style)
    _write_svg(args.svg, story.svg())
    print(summary)
    print()
    print(story.text)
    _svg_written(args.svg)
    return 0


if __name__ == "__main__":
    from rankengine.cli.main import main

    sys.exit(main())
