"""The ``rankengine`` command line.

Each feature module adds its own subcommands through a ``register(subparsers)``
function; this module only builds the parser, dispatches, and turns expected
errors into a one-line message and a non-zero exit (never a traceback).

Exit codes: 0 success, 1 the command failed (message on stderr), 2 bad
arguments (argparse's usage message).

>>> main(["--version"])  # doctest: +SKIP
rankengine 0.1.0
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Final

__all__ = ["main"]

#: Modules that contribute subcommands, in the order ``--help`` lists them.
COMMAND_MODULES: Final = (
    "rankengine.demo",
    "rankengine.cli_viz",
    "rankengine.cli_log",
    "rankengine.cli_trending",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand."""
    from rankengine import __version__

    parser = argparse.ArgumentParser(
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("rankengine: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        print(f"rankengine {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
