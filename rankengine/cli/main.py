"""The ``rankengine`` command line.

Each feature module adds its own subcommands through a ``register(subparsers)``
function; this module only builds the parser, dispatches, and turns expected
errors into a one-line message and a non-zero exit (never a traceback).

Exit codes: 0 success, 1 the command failed (message on stderr), 2 bad
arguments (argparse's usage message), 130 interrupted (Ctrl-C).  Output
into a closed pipe (``rankengine replay DIR | head -1``) ends the command
quietly with 0, as the Unix convention wants: no message, no traceback.

>>> main(["--version"])  # doctest: +SKIP
rankengine 0.1.0
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import Final

from rankengine import __version__
from rankengine.cli.args import ArgumentParser

__all__ = ["EXIT_INTERRUPTED", "interrupted", "main", "reader_gone"]

#: Modules that contribute subcommands, in the order ``--help`` lists them.
COMMAND_MODULES: Final = (
    "rankengine.cli.demo",
    "rankengine.cli.viz",
    "rankengine.cli.explore",
    "rankengine.cli.log",
    "rankengine.cli.salvage",
    "rankengine.cli.forget",
    "rankengine.cli.migrate",
    "rankengine.cli.trending",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand."""
    parser = ArgumentParser(
        prog="rankengine",
        description="rankengine: an embeddable ranking engine. Run a demo, look inside "
        "the skip list, check or replay an event log, follow trending keys.",
    )
    parser.add_argument("--version", action="version", version=f"rankengine {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


#: Exit code after Ctrl-C: the shell's 128 + SIGINT.
EXIT_INTERRUPTED: Final = 130


def interrupted() -> int:
    """Say that Ctrl-C stopped the command (one line on stderr); return 130."""
    print("rankengine: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def reader_gone() -> int:
    """End quietly after the reader of stdout went away (``... | head -1``).

    Points stdout at the null device, so the interpreter's last flush of
    what is still buffered cannot fail again ("Exception ignored ... Broken
    pipe" on stderr).  Returns the exit code, 0.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return 0  # not a real file (a test's StringIO): nothing to flush at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    if sys.stdout is None:  # started with stdout closed (cmd >&-): nowhere to write
        print(f"rankengine {args.command}: error: standard output is closed", file=sys.stderr)
        return 1
    try:
        return handler(args)
    except KeyboardInterrupt:
        return interrupted()
    except BrokenPipeError:
        return reader_gone()
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        print(f"rankengine {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
