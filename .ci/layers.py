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

It also checks that no file imports, through its `use` declarations, a file that imports it
back, directly or through others: no import loop between files. A file's own parent module
(`mod.rs`, `lib.rs`) and re-exports (`pub use`) are left out: a module declaring and re-exporting
its children while they use its items is the shape of a module, not a loop.

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


USE = re.compile(r"^\s*use\s+((?:crate|super|self)::[^;]+);")


def expand(path):
    """The paths a `use` tree names: `a::{b, c::d}` -> [a::b, a::c::d]."""
    brace = path.find("{")
    if brace < 0:
        return [path.strip()]
    prefix, inner = path[:brace], path[brace + 1 : path.rfind("}")]
    parts, depth, current = [], 0, ""
    for char in inner:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += (char == "{") - (char == "}")
        current += char
    parts.append(current)
    return [expanded for part in parts if part.strip() for expanded in expand(prefix + part.strip())]


def module_file(src, module):
    """The file of `module` (a list of names), if it is one of src's files."""
    for candidate in (os.path.join(src, *module) + ".rs", os.path.join(src, *module, "mod.rs")):
        if module and os.path.isfile(candidate):
            return os.path.normpath(candidate)
    return None


def imported_files(src, file, module, text):
    """The files whose items `file` (module `module`) imports with `use`, parents left out."""
    ancestors = {module_file(src, module[:length]) for length in range(len(module))}
    ancestors.add(os.path.normpath(os.path.join(src, "lib.rs")))
    found = set()
    for statement in USE.finditer(text.replace("\n", " ")):
        for path in expand(statement.group(1)):
            segments = [segment.strip() for segment in path.split("::")]
            head, rest = segments[0], segments[1:]
            base = [] if head == "crate" else list(module) if head == "self" else list(module[:-1])
            while rest and rest[0] == "super":
                rest.pop(0)
                base = base[:-1]
            target = None
            for length in range(len(rest), 0, -1):
                target = module_file(src, base + rest[:length])
                if target:
                    break
            if target and target != os.path.normpath(file) and target not in ancestors:
                found.add(target)
    return found


def import_loops(src):
    """Every import loop between files: a line per loop found (its files, in order)."""
    graph = {}
    for directory, _, files in os.walk(src):
        for name in files:
            if name.endswith(".rs"):
                file = os.path.normpath(os.path.join(directory, name))
                with open(file, encoding="utf-8") as handle:
                    text = "\n".join(
                        code_of(line) for line in handle if not re.match(r"\s*pub(\([\w ]+\))?\s+use", line)
                    )
                graph[file] = imported_files(src, file, module_path(src, file), text)
    loops, done, stack = [], set(), []

    def visit(file):
        stack.append(file)
        for target in sorted(graph.get(file, ())):
            if target in stack:
                loop = stack[stack.index(target) :]
                loops.append(" -> ".join(os.path.relpath(part) for part in loop + [target]))
            elif target not in done:
                visit(target)
        stack.pop()
        done.add(file)

    for file in sorted(graph):
        if file not in done:
            visit(file)
    return loops


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
    violations += [f"import loop: {loop}" for loop in import_loops(src)]
    for violation in violations:
        print(violation)
    if violations:
        print(f"layers: {len(violations)} imports break the layer rule", file=sys.stderr)
        return 1
    print("layers: every import keeps to its layer or below, and no two files import each other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
