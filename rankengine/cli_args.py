"""Argument types shared by the command-line tools.

Each turns one command-line word into a value or raises
:class:`argparse.ArgumentTypeError`, which argparse reports as a one-line
usage error with exit status 2 (never a traceback).  Whole numbers may be
written with ``_`` or ``,`` between digit groups (``100_000``, ``100,000``).
"""

from __future__ import annotations

import argparse
import textwrap

__all__ = ["HelpFormatter", "non_negative", "output_path", "positive", "whole_number"]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, except that a description or epilog keeps its
    line breaks: each line is filled on its own, so a list of examples shows
    one whole command a line (argparse joins them into one paragraph)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            body = " ".join(line.split())
            lead = indent + " " * (len(line) - len(line.lstrip()))
            lines.append(
                textwrap.fill(body, width, initial_indent=lead, subsequent_indent=lead)
                if body
                else ""
            )
        return "\n".join(lines)


def whole_number(text: str) -> int:
    """``text`` as an int.

    Runtime complexity: O(len(text))

    >>> whole_number("100_000"), whole_number("1,000")
    (100000, 1000)
    >>> whole_number("lots")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'lots' is not a whole number
    """
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive(text: str) -> int:
    """``text`` as an int of at least 1.

    Runtime complexity: O(len(text))

    >>> positive("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be at least 1, got 0
    """
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative(text: str) -> int:
    """``text`` as an int of at least 0.

    Runtime complexity: O(len(text))

    >>> non_negative("0"), non_negative("-5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must not be negative, got -5
    """
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def output_path(text: str) -> str:
    """``text`` as the name of a file to write: anything but an empty name
    (which ``open`` and the shell would only report as a missing file).

    Runtime complexity: O(1)

    >>> output_path("out.csv")
    'out.csv'
    >>> output_path("")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: the file name is empty
    """
    if not text:
        raise argparse.ArgumentTypeError("the file name is empty")
    return text
