#!/usr/bin/env python3
"""Checks the repository's Markdown files (README.md, docs/, the READMEs beside the code).

Links: every relative link names a file that exists, and every #anchor one of that file's
headings, spelled as GitHub spells a heading's anchor.

Reference pages (docs/*.md and any folder under docs/ but docs/lab/, the dated measurement notes
kept for the record): at most MAX_LINES lines, and no heading that names a date (YYYY-MM-DD) or
a round ("third round"): a reference page says how things work now and gives the current figures
once; the history goes to docs/lab/.

Prints each problem as FILE:LINE: MESSAGE and exits 1 if there is one.

usage: check-doc-links.py [ROOT]   (default: the repository this script is in)
"""
import functools
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
MAX_LINES = 450
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
ROUND = re.compile(r"\bround\b", re.IGNORECASE)


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


def is_reference_page(root, path):
    """A page of docs/ outside docs/lab/."""
    parts = os.path.relpath(path, root).split(os.sep)
    return len(parts) >= 2 and parts[0] == "docs" and parts[1] != "lab"


def lint_reference_page(root, path):
    """The problems of a reference page: too long, or a heading with a date or a round."""
    where = os.path.relpath(path, root)
    problems = []
    lines = unfenced(path)
    if len(lines) > MAX_LINES:
        problems.append(f"{where}:{len(lines)}: {len(lines)} lines, more than {MAX_LINES} for a "
                        f"reference page: split it by topic, or move its history to docs/lab/")
    for number, line in enumerate(lines, 1):
        m = HEADING.match(line)
        if not m:
            continue
        if DATE.search(m.group(2)):
            problems.append(f"{where}:{number}: heading names a date, a dated section belongs in "
                            f"docs/lab/: {line.strip()}")
        elif ROUND.search(m.group(2)):
            problems.append(f"{where}:{number}: heading names a round, a round of measurements "
                            f"belongs in docs/lab/: {line.strip()}")
    return problems


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
    lint = []
    for path in files:
        if is_reference_page(root, path):
            lint += lint_reference_page(root, path)
    for problem in lint:
        print(problem)
    print(f"check-doc-links: {len(files)} files, {broken} broken links, "
          f"{len(lint)} reference-page problems")
    return 1 if broken or lint else 0


if __name__ == "__main__":
    sys.exit(main())
