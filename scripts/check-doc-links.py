#!/usr/bin/env python3
"""Checks the links of the repository's Markdown files (README.md, docs/, the READMEs beside the
code): every relative link names a file that exists, and every #anchor one of that file's
headings, spelled as GitHub spells a heading's anchor. Prints each broken link and exits 1 if
there is one.

usage: check-doc-links.py [ROOT]   (default: the repository this script is in)
"""
import functools
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def unfenced(path):
    """The file's lines with fenced code blanked (its brackets and #s are code), the count kept."""
    fenced, lines = False, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fenced = not fenced
                lines.append("\n")
            else:
                lines.append("\n" if fenced else line)
    return lines


@functools.lru_cache(maxsize=None)
def anchors(path):
    """The anchors of a Markdown file's headings, duplicates numbered."""
    found, seen = set(), {}
    for line in unfenced(path):
        m = HEADING.match(line)
        if not m:
            continue
        text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2)).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = []
    for top, dirs, names in os.walk(root):
        # Build trees, git's, and ignored scratch folders (names starting with a dot) hold no docs.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not d.startswith("build"))
        files += [os.path.join(top, n) for n in sorted(names) if n.endswith(".md")]
    broken = 0
    for path in files:
        # Whole text, so that a link whose text runs over a line break is found too.
        text = "".join(unfenced(path))
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto: ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            where = f"{os.path.relpath(path, root)}:{text.count(chr(10), 0, m.start(1)) + 1}"
            if not os.path.exists(dest):
                print(f"{where}: link to a missing file: {target}")
                broken += 1
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                print(f"{where}: no heading for the anchor: {target}")
                broken += 1
    print(f"check-doc-links: {len(files)} files, {broken} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
