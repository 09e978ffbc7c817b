"""Every relative link in the README and the docs leads somewhere.

A link is ``[text](target)`` or ``![alt](target)``; its target is a file
relative to the page (which must exist) and optionally ``#anchor``, which
must be the slug of a heading of that page, made as GitHub makes it
(lower case, punctuation dropped, spaces to hyphens, ``-1``, ``-2``, ...
for repeats).  Links inside fenced code blocks are not links.  Web links
are not followed (the suite runs offline).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_NOT_SLUG = re.compile(r"[^\w\- ]")


def _prose(text: str) -> Iterator[str]:
    """The page's lines outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield line


def slugs(text: str) -> set[str]:
    """GitHub's anchors for the headings of a Markdown page.

    >>> sorted(slugs("# A `b`, c!\\n## Run\\n## Run\\n```\\n# not a heading\\n```"))
    ['a-b-c', 'run', 'run-1']
    """
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in _prose(text):
        match = _HEADING.match(line)
        if match is None:
            continue
        slug = _NOT_SLUG.sub("", match.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def broken_links(page: Path) -> list[str]:
    """Targets on ``page`` that lead nowhere, each with the reason."""
    text = page.read_text(encoding="utf-8")
    # Link text may wrap, so look for targets in the whole prose, not per line.
    prose = "\n".join(_prose(text))
    broken = []
    for target in _LINK.findall(prose):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = page if not path else (page.parent / path)
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT)}")
        elif (
            anchor
            and dest.suffix == ".md"
            and anchor not in slugs(dest.read_text(encoding="utf-8"))
        ):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_file_or_anchor_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "other.md").write_text("# Other page\n\n## Its part\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[ok](other.md#its-part) [ok](#page) [web](https://example.com/x#y)\n"
        "[gone](missing.md) [no such\npart](other.md#nothing) [self](#nowhere)\n"
        "```\n[in code](also-missing.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no file missing.md",
        "other.md#nothing: no heading #nothing in other.md",
        "#nowhere: no heading #nowhere in page.md",
    ]
