#!/usr/bin/env python3
"""Fails on a function of ktune's libraries, front ends or examples longer than the limit.

A long function mixes concerns; split it into named steps. Lengths are read with universal-ctags
(Debian's universal-ctags: each function's first and last line), lambdas included. One function
is excepted, for the reason its comment gives: the expression interpreter's dispatch loop.

usage: check-function-length.py [SOURCE_DIR] [--limit N]
Exit 0: every function within the limit; 1: some are longer (each named, file:line); 77: no
universal-ctags on this machine (skipped, saying so).
"""
import os
import shutil
import subprocess
import sys

FOLDERS = ["tuner", "plugins", "python/src", "examples"]
SUFFIXES = (".cpp", ".h", ".hpp")
# (file, function): the interpreter's dispatch loop is one switch over the operations, kept in
# one place on purpose (tuner/core/expr.cpp says why).
EXCEPTED = {("tuner/core/expr.cpp", "run")}


def functions(root, files):
    out = subprocess.run(
        ["ctags", "--fields=+ne", "--c++-kinds=f", "--language-force=C++", "-o", "-"] + files,
        cwd=root, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) < 4:
            continue
        name, path = fields[0], fields[1]
        start = end = None
        for f in fields[3:]:
            if f.startswith("line:"):
                start = int(f[5:])
            elif f.startswith("end:"):
                end = int(f[4:])
        if start is not None and end is not None:
            yield path, name, start, end - start + 1


def main(argv):
    args = argv[1:]
    limit = 80
    if "--limit" in args:
        i = args.index("--limit")
        limit = int(args[i + 1])
        del args[i:i + 2]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not shutil.which("ctags"):
        print("check-function-length: no ctags (Debian: apt-get install universal-ctags); skipped")
        return 77
    version = subprocess.run(["ctags", "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        print("check-function-length: ctags is not universal-ctags; skipped")
        return 77
    files = []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for n in sorted(names):
                if n.endswith(SUFFIXES):
                    files.append(os.path.relpath(os.path.join(dirpath, n), root))
    long_ones = []
    for path, name, start, length in functions(root, files):
        if length > limit and (path, name) not in EXCEPTED:
            shown = "a lambda" if name.startswith("__anon") else name
            long_ones.append((length, f"{path}:{start}: {shown} is {length} lines"))
    for _, text in sorted(long_ones, reverse=True):
        print(text)
    if long_ones:
        print(f"{len(long_ones)} function(s) over {limit} lines: split each into named steps")
        return 1
    print(f"check-function-length: {len(files)} files, no function over {limit} lines "
          f"(but the {len(EXCEPTED)} excepted)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
