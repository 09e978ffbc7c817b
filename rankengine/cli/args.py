"""Argument types shared by the command-line tools.

Each turns one command-line word into a value or raises
:class:`argparse.ArgumentTypeError`, which argparse reports as a one-line
usage error with exit status 2 (never a traceback).  Whole numbers may be
written with ``_`` or ``,`` between digit groups (``100_000``, ``100,000``).
Numbers are ASCII digits only: ``int()`` and ``float()`` also read other
scripts' digits (``'\u0663'``, fullwidth ``'\uff13'``), which the command line
refuses as not a number.

The command line's parsers are :class:`ArgumentParser`: a negative number
in any form (``-1e3``, ``-1.5e-2``, ``-inf``) is a value, never an option.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from typing import Any, Final

__all__ = [
    "NEGATIVE_NUMBER",
    "ArgumentParser",
    "HelpFormatter",
    "non_negative",
    "output_path",
    "positive",
    "whole_number",
]

#: A word that is a negative number, not an option: every form ``float()``
#: and :func:`whole_number` read (``-1e3``, ``-1.5E-2``, ``-.5``, ``-1_000``,
#: ``-1,000``, ``-inf``, ``-Infinity``, ``-nan``).  argparse's own pattern
#: (``^-\d+$|^-\d*\.\d+$``) misses exponents, digit separators and the
#: words, so ``--find -1e3`` failed with "expected one argument".  A word
#: that only starts like a number (``-1..2``) also counts, so its option's
#: type reports it ("not a number") instead of argparse.  No option of the
#: command line has this form (each is ``-`` and a letter, or ``--`` and a
#: word), so none is hidden.
NEGATIVE_NUMBER: Final = re.compile(
    r"-(?:\.?[0-9][0-9_,.]*(?:e[-+]?[0-9_]+)?|inf(?:inity)?|nan)\Z", re.IGNORECASE | re.ASCII
)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, except that a word matching :data:`NEGATIVE_NUMBER`
    is a value (of an option, or a positional argument), never an option.

    Its sub-parsers are of this class too (``add_subparsers`` makes them of
    the parser's own class).  Rewriting argv instead (``--find -1e3`` into
    ``--find=-1e3``) would have to know which options take values and could
    not help a positional (``show -1e3``) or the second value of ``--update
    OLD NEW``; widening the pattern argparse asks covers every place.

    >>> parser = ArgumentParser(prog="demo")
    >>> _ = parser.add_argument("--min", type=float)
    >>> parser.parse_args(["--min", "-1e3"]).min
    -1000.0
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # argparse asks this (private) pattern whether a word that starts
        # with "-" is a negative number rather than an unknown option
        self._negative_number_matcher = NEGATIVE_NUMBER


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
    """``text`` as an int, written in ASCII digits.

    Runtime complexity: O(len(text))

    >>> whole_number("100_000"), whole_number("1,000"), whole_number("-7")
    (100000, 1000, -7)
    >>> whole_number("lots")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'lots' is not a whole number
    >>> whole_number("\uff13")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '３' is not a whole number
    """
    try:
        if not text.isascii():  # int() reads "\u0663" (Arabic-Indic 3) as 3
            raise ValueError(text)
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
