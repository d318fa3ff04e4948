#!/usr/bin/env python3
"""Checks every #include of ktune's libraries against the layers the build declares.

The layers come from the JSON the build writes (ktune_write_layers in cmake/KtuneHelpers.cmake:
each layer's folder and the layers it depends on, bottom first). For every source and header of
a layer:
  - "ktune/NAME.h" must be a public header of the layer itself or of a layer it may use: its own
    dependencies and theirs (a PRIVATE dependency is the layer's own, not passed up);
  - "LAYER/..." (a private header, reached from tuner/) must belong to the layer itself;
  - a public header (LAYER/include/...) may include no private header at all, since it is
    installed and read by the layers above.
The front ends (the ktune program, the Python module, the built-in kernels) may include public
headers of the layers they link and no private header. With --installed FILE (the list
cmake/KtuneInstall.cmake writes: the API headers, then what they include), the installed headers
must be exactly the API and what it includes: every header they include is installed, and every
installed one is reached from the API. Exits 1 naming each problem (file:line), 0 when there is
none; `--self-test` checks the checker on a small tree of its own.

usage: check-layering.py LAYERS_JSON [SOURCE_DIR] [--installed FILE]
       check-layering.py --self-test
"""
import json
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
SOURCES = (".cpp", ".h", ".hpp", ".inc", ".cu", ".cuh")
# Front ends: their folder and the layers (with what those use) they may include from; "*" is
# every layer. "plugin_api" is the plugin ABI of plugins/include, which kernels passes up.
FRONT_ENDS = [
    ("tuner/cli", ["*"]),
    ("python/src", ["*"]),
    ("plugins/builtin", ["kernels"]),
]


def load_layers(path):
    with open(path) as f:
        layers = json.load(f)
    for layer in layers:
        layer.setdefault("private_depends", [])
    return layers


def closure(layers, names):
    """The layers `names` stand on, themselves included, through public dependencies."""
    by_name = {l["name"]: l for l in layers}
    seen, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n in seen or n not in by_name:
            continue
        seen.add(n)
        todo.extend(by_name[n]["depends"])
    return seen


def allowed_for(layers, layer):
    own = closure(layers, [layer["name"]] + layer["private_depends"])
    if "kernels" in own:
        own.add("plugin_api")
    return own


def public_headers(root, layers):
    """ktune/NAME -> the layer whose include root holds it."""
    owner = {}
    roots = [(l["name"], os.path.join(root, l["dir"], "include")) for l in layers]
    roots.append(("plugin_api", os.path.join(root, "plugins", "include")))
    for name, inc in roots:
        for dirpath, _, files in os.walk(inc):
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), inc).replace(os.sep, "/")
                owner.setdefault(rel, set()).add(name)
    return owner


def files_under(folder):
    for dirpath, _, files in os.walk(folder):
        for f in sorted(files):
            if f.endswith(SOURCES):
                yield os.path.join(dirpath, f)


def check(root, layers):
    """Returns the list of violations, each 'path:line: message'."""
    owner = public_headers(root, layers)
    layer_dirs = {l["name"]: l["dir"] for l in layers}
    problems = []

    def check_file(path, allowed, own_layer, is_public):
        rel_path = os.path.relpath(path, root)
        with open(path, errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(2)
                where = f"{rel_path}:{number}"
                first = target.split("/", 1)[0]
                if target.startswith("ktune/"):
                    found = owner.get(target)
                    if not found:
                        if m.group(1) == '"' and not os.path.exists(
                                os.path.join(os.path.dirname(path), target)):
                            problems.append(f"{where}: {target} is no layer's public header")
                        continue
                    if not (found & allowed):
                        problems.append(
                            f"{where}: includes {target} of layer {'/'.join(sorted(found))}, "
                            f"which {own_layer} may not use (it may use: "
                            f"{', '.join(sorted(allowed - {'plugin_api'})) or 'none'})")
                elif m.group(1) == '"' and first in layer_dirs and "/" in target:
                    if is_public:
                        problems.append(f"{where}: the public header includes the private "
                                        f"header {target}")
                    elif first != own_layer:
                        problems.append(f"{where}: includes {target}, a private header of "
                                        f"layer {first}, from {own_layer}")

    for layer in layers:
        allowed = allowed_for(layers, layer)
        folder = os.path.join(root, layer["dir"])
        include_root = os.path.join(folder, "include")
        for path in files_under(folder):
            check_file(path, allowed, layer["name"], path.startswith(include_root + os.sep))
    every = {l["name"] for l in layers} | {"plugin_api"}
    for folder, uses in FRONT_ENDS:
        allowed = every if "*" in uses else closure(layers, uses)
        if "kernels" in allowed:
            allowed.add("plugin_api")
        for path in files_under(os.path.join(root, folder)):
            check_file(path, allowed, folder, False)
    return problems


def check_installed(root, listing):
    """The installed set against the API's closure under #include."""
    api, installed, section = [], [], None
    with open(listing) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                section = "api" if "API" in line else "deps"
                continue
            if line:
                installed.append(line)
                if section == "api":
                    api.append(line)
    by_name = {"ktune/" + os.path.basename(p): p for p in installed}
    owner = {}
    for dirpath, _, files in os.walk(root):
        if "/include/ktune" in dirpath.replace(os.sep, "/") and "/build" not in dirpath:
            for f in files:
                owner.setdefault("ktune/" + f, os.path.relpath(os.path.join(dirpath, f), root))
    problems, reached, todo = [], set(), list(api)
    while todo:
        rel = todo.pop()
        if rel in reached:
            continue
        reached.add(rel)
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            problems.append(f"{listing}: {rel} is installed but does not exist")
            continue
        with open(path, errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m or not m.group(2).startswith("ktune/"):
                    continue
                name = m.group(2)
                if name not in by_name:
                    problems.append(f"{rel}:{number}: the installed header includes {name} "
                                    f"({owner.get(name, 'not found')}), which is not installed")
                else:
                    todo.append(by_name[name])
    for rel in installed:
        if rel not in reached:
            problems.append(f"{listing}: {rel} is installed but no API header includes it")
    return problems, len(api), len(installed)


def self_test():
    layers = [
        {"name": "core", "dir": "tuner/core", "depends": []},
        {"name": "kernels", "dir": "tuner/kernels", "depends": ["core"]},
        {"name": "strategies", "dir": "tuner/strategies", "depends": ["core"]},
        {"name": "loop", "dir": "tuner/loop", "depends": ["kernels", "strategies"]},
    ]
    files = {
        "tuner/core/include/ktune/value.h": "#pragma once\n",
        "tuner/kernels/include/ktune/kernel.h": '#include "ktune/value.h"\n',
        "tuner/kernels/kernel.cpp": '#include "ktune/kernel.h"\n#include "kernels/own.h"\n',
        "tuner/kernels/own.h": "#pragma once\n",
        "tuner/strategies/include/ktune/strategy.h": '#include "ktune/value.h"\n',
        "tuner/strategies/basic.cpp": '#include "ktune/strategy.h"\n',
        "tuner/loop/tuner.cpp": '#include "ktune/kernel.h"\n#include "ktune/strategy.h"\n',
        "tuner/cli/main.cpp": '#include "ktune/kernel.h"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        for rel, text in files.items():
            write(rel, text)
        clean = check(root, [dict(l, private_depends=[]) for l in layers])
        if clean:
            print("self-test: a clean tree was refused:\n  " + "\n  ".join(clean))
            return 1
        # Each of these must be caught, naming the file and line.
        bad = {
            "tuner/strategies/wrong.cpp": ('#include "ktune/kernel.h"\n', "tuner/strategies/wrong.cpp:1"),
            "tuner/kernels/up.cpp": ('// x\n#include "ktune/strategy.h"\n', "tuner/kernels/up.cpp:2"),
            "tuner/loop/peek.cpp": ('#include "kernels/own.h"\n', "tuner/loop/peek.cpp:1"),
            "tuner/kernels/include/ktune/leak.h": ('#include "kernels/own.h"\n',
                                                   "tuner/kernels/include/ktune/leak.h:1"),
            "tuner/cli/peek.cpp": ('#include "kernels/own.h"\n', "tuner/cli/peek.cpp:1"),
        }
        for rel, (text, where) in bad.items():
            write(rel, text)
            found = check(root, [dict(l, private_depends=[]) for l in layers])
            os.remove(os.path.join(root, rel))
            if not any(p.startswith(where + ":") for p in found):
                print(f"self-test: {rel} was not caught ({found})")
                return 1
        # The installed set: closed under #include and reached from the API, or refused.
        listing = os.path.join(root, "installed.txt")
        cases = [
            ("tuner/kernels/include/ktune/kernel.h\n", "includes ktune/value.h"),
            ("tuner/kernels/include/ktune/kernel.h\n# what it includes\n"
             "tuner/core/include/ktune/value.h\ntuner/strategies/include/ktune/strategy.h\n",
             "strategy.h is installed but no API header includes it"),
        ]
        for text, expected in cases:
            with open(listing, "w") as f:
                f.write("# the API\n" + text)
            found, _, _ = check_installed(root, listing)
            if not any(expected in p for p in found):
                print(f"self-test: the installed set was not refused for '{expected}' ({found})")
                return 1
        with open(listing, "w") as f:
            f.write("# the API\ntuner/kernels/include/ktune/kernel.h\n# what it includes\n"
                    "tuner/core/include/ktune/value.h\n")
        found, _, _ = check_installed(root, listing)
        if found:
            print(f"self-test: a closed installed set was refused: {found}")
            return 1
    print("self-test: the check refuses each forbidden include and installed header and passes a "
          "clean tree")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    args = argv[1:]
    installed = None
    if "--installed" in args:
        i = args.index("--installed")
        if i + 1 >= len(args):
            print("--installed needs the list of installed headers", file=sys.stderr)
            return 2
        installed = args[i + 1]
        del args[i:i + 2]
    if len(args) not in (1, 2):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    root = args[1] if len(args) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    layers = load_layers(args[0])
    problems = check(root, layers)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the layering declared in tuner/CMakeLists.txt")
    if installed:
        header_problems, api, count = check_installed(root, installed)
        for p in header_problems:
            print(p)
        if header_problems:
            print(f"{len(header_problems)} problem(s) with the installed headers")
        else:
            print(f"installed headers: {count}, the {api} of the API and what they include")
        problems += header_problems
    if problems:
        return 1
    print(f"layering: every include of {len(layers)} layers and {len(FRONT_ENDS)} front ends "
          "keeps to the declared layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
