#!/usr/bin/env python3
"""The layer rule of nanolimit's `src/`, checked: a module imports only from its own layer or
below, and the modules of one upper layer (the limiter kinds, the integrations) never import
each other. The layers, lowest first, as the crate documentation states them:

    0  sync, clock, thread_index   what every other part reads: atomics, time, thread numbers
    1  quota                       what a state word means: pure steps
    2  engine                      the driver, operations, requests, decisions, errors
    3  store                       where words live: one word, the keyed table
    4  limiter                     the core over a store: Limiter, KeyedLimiter, waits, counters
    5  striped, live, composite,   limiter kinds: each a meaning or a policy over the layers
       sliding_log, inflight       below, none reaching into another
    6  http, redis                 integrations: nothing imports them

An import is any path `crate::...`, `super::...` or `self::...` in code (comments and doc
comments are not read), resolved to the module it names. A path through the crate root's
re-exports (`crate::Limiter`) is reported too: inside the crate, name the module.

Usage: python3 .ci/layers.py [SRC_DIR]   (exit 1 and a line per violation if any)
"""

import os
import re
import sys

LAYERS = {
    "sync": 0,
    "clock": 0,
    "thread_index": 0,
    "quota": 1,
    "engine": 2,
    "store": 3,
    "limiter": 4,
    "striped": 5,
    "live": 5,
    "composite": 5,
    "sliding_log": 5,
    "inflight": 5,
    "http": 6,
    "redis": 6,
}
# Layers whose modules may import each other: the ground floor's small shared pieces.
SIBLINGS_ALLOWED = {0}

PATH = re.compile(r"\b(crate|super|self)((?:::(?:\w+|\{))+)")
INLINE_MODULE = re.compile(r"^\s*(?:pub(?:\([\w ]+\))?\s+)?mod\s+(\w+)\s*\{")


def module_path(src, file):
    """The module path of `file` (a list of names), e.g. src/store/table/mod.rs -> [store, table]."""
    relative = os.path.relpath(file, src)[: -len(".rs")].split(os.sep)
    if relative[-1] == "mod":
        relative.pop()
    return relative


def code_of(line):
    """`line` without its comment (a `//` outside a string literal)."""
    in_string = False
    previous = ""
    for index, char in enumerate(line):
        if char == '"' and previous != "\\":
            in_string = not in_string
        if not in_string and line.startswith("//", index):
            return line[:index]
        previous = char
    return line


def targets(module, head, rest, text, position):
    """The top-level modules a path starting `head` and going on with `rest` names."""
    segments = [segment for segment in rest.split("::") if segment]
    if head == "crate":
        base = []
    elif head == "self":
        base = list(module)
    else:
        base = list(module[:-1])
        while segments and segments[0] == "super":
            segments.pop(0)
            base = base[:-1]
    if base:
        return [base[0]]
    if not segments:
        return []
    if segments[0] == "{":
        # `crate::{a::b, c}`: every name at the group's top level.
        depth, names, name = 0, [], ""
        for char in text[position:]:
            if char == "{":
                depth += 1
                if depth > 1:
                    continue
                name = ""
                continue
            if char == "}":
                depth -= 1
                if depth == 0:
                    names.append(name)
                    break
                continue
            if depth == 1:
                if char == ",":
                    names.append(name)
                    name = ""
                else:
                    name += char
        return [name.strip().split("::")[0] for name in names if name.strip()]
    return [segments[0]]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    violations = []
    for directory, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            file = os.path.join(directory, name)
            module = module_path(src, file)
            if module == ["lib"]:
                continue
            own = module[0]
            if own not in LAYERS:
                violations.append(f"{file}: module `{own}` has no layer (add it to .ci/layers.py)")
                continue
            with open(file, encoding="utf-8") as handle:
                # Inline modules (`mod private { ... }`) and the brace depth each opened at.
                inline, depth = [], 0
                for number, line in enumerate(handle, 1):
                    code = code_of(line)
                    opened = INLINE_MODULE.match(code)
                    if opened:
                        inline.append((opened.group(1), depth))
                    depth += code.count("{") - code.count("}")
                    while inline and depth <= inline[-1][1] and not opened:
                        inline.pop()
                    here = module + [name for name, _ in inline]
                    for match in PATH.finditer(code):
                        for target in targets(here, match.group(1), match.group(2), code, match.start(2)):
                            if target == own or target in ("self", "super"):
                                continue
                            where = f"{os.path.relpath(file)}:{number}"
                            if target not in LAYERS:
                                violations.append(
                                    f"{where}: `{own}` imports `crate::{target}`, not a module "
                                    "(name the module, not the crate root's re-export)"
                                )
                            elif LAYERS[target] > LAYERS[own]:
                                violations.append(
                                    f"{where}: `{own}` (layer {LAYERS[own]}) imports `{target}` "
                                    f"(layer {LAYERS[target]}), a higher layer"
                                )
                            elif LAYERS[target] == LAYERS[own] and LAYERS[own] not in SIBLINGS_ALLOWED:
                                violations.append(
                                    f"{where}: `{own}` imports `{target}`, beside it in layer "
                                    f"{LAYERS[own]} (modules of one layer are independent)"
                                )
    for violation in violations:
        print(violation)
    if violations:
        print(f"layers: {len(violations)} imports break the layer rule", file=sys.stderr)
        return 1
    print("layers: every import keeps to its layer or below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
