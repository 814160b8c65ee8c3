#!/usr/bin/env python3
"""The include rule of docs/architecture.md: an edge includes lib/'s public headers only.

Public headers live in include/ (`<gpuslice.h>`, `<gpuslice/*.h>`); every header in lib/ is
lib's own. This reads each source file of an edge directory and reports every `#include` of
a header that lives in lib/, as `file:line: includes lib/'s private header NAME`.

Usage: check_includes.py [--root DIR]   (exit 0 clean, 1 violations, 2 usage)
"""
import argparse
import pathlib
import re
import sys

EDGES = ("cli", "daemon", "preload", "plan", "integrations")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def private_headers(root):
    return {p.name for p in (root / "lib").glob("*.h")}


def is_private(included, private):
    """A bare name of a lib/ header, or any path that goes through lib/ to one."""
    p = pathlib.PurePath(included)
    if p.name not in private:
        return False
    return len(p.parts) == 1 or (len(p.parts) >= 2 and p.parts[-2] == "lib")


def edge_sources(root):
    for edge in EDGES:
        top = root / edge
        if top.is_dir():
            yield from sorted(p for p in top.rglob("*") if p.suffix in (".c", ".h", ".go"))


def violations(root):
    private = private_headers(root)
    for path in edge_sources(root):
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and is_private(m.group(1), private):
                yield f"{path.relative_to(root)}:{n}: includes lib/'s private header {m.group(1)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=pathlib.Path(__file__).resolve().parents[2], type=pathlib.Path)
    args = ap.parse_args()
    if not (args.root / "lib").is_dir():
        print(f"check_includes: {args.root}: no lib/ directory", file=sys.stderr)
        return 2
    found = list(violations(args.root))
    for v in found:
        print(v)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
