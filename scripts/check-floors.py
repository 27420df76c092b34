#!/usr/bin/env python3
"""The floors of each crate (crates/README.md, "## Floors"): inside a crate a
module imports only modules on lower floors.

Each line of that section reads `crate: a, b > c > d::e` (top floor first,
modules of one floor separated by commas, `lib` the crate root). An import
is a path to another module of the crate in code (`crate::x`, `super::x`,
`use crate::{x, y}`); comments and `#[cfg(test)]` code are not imports, nor
is a parent's relative path to its own child (`mod dir; use dir::Child`):
declaring a child is the one way down that needs no name. A name the crate
root re-exports (`pub use x::Name`) imported as `crate::Name` is an import
of `x`, the module it comes from. Unit-test modules (`tests.rs`,
`*_tests.rs`, `#[cfg(test)] mod x;`) are on no floor.
Exceptions, each with why, are lines of "## Upward imports" reading
`crate: from -> to: why`.

  scripts/check-floors.py            check (exit 1 on an arrow that runs up)
  scripts/check-floors.py --suggest  print floors computed from the imports
"""
import os
import re
import sys
from collections import defaultdict

CRATES = "crates"
README = os.path.join(CRATES, "README.md")
REEXPORTS = True
IDENT = r"[a-z_][a-z0-9_]*"


def modules(src):
    """Module path ("" for the crate root) -> file."""
    mods = {}
    for dp, _, fs in os.walk(src):
        for f in fs:
            if not f.endswith(".rs"):
                continue
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            mods["::".join(rel)] = p
    return mods


def test_only(path):
    n = os.path.basename(path)
    return n == "tests.rs" or n.endswith("_tests.rs")


def cfg_test_children(mods):
    """Modules declared only for unit tests (`#[cfg(test)] mod x;`)."""
    out = set()
    pat = r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod (" + IDENT + r");"
    for m, p in mods.items():
        for x in re.findall(pat, open(p).read()):
            out.add(f"{m}::{x}" if m else x)
    return out


def reexports(mods, known):
    """`crate::Name` -> the module a `pub use` of the crate root takes it
    from: an import of a name the root re-exports is an import of the
    module that defines it."""
    out = {}
    if "" not in mods:
        return out
    text = re.sub(r"//[^\n]*", "", without_tests(open(mods[""]).read()))
    pat = r"\bpub use (" + IDENT + r"(?:::" + IDENT + r")*)::(\{[^}]*\}|\w+)\s*;"
    for m in re.finditer(pat, text):
        src = resolve(m.group(1).split("::"), known)
        if not src:
            continue
        for it in m.group(2).strip("{}").split(","):
            it = it.strip()
            if " as " in it:
                it = it.split(" as ")[1].strip()
            if it:
                out[it] = src
    return out


def without_tests(text):
    """The text without `#[cfg(test)]` items (a `mod x;` or a block)."""
    while True:
        i = text.find("#[cfg(test)]")
        if i == -1:
            return text
        j, k = text.find("{", i), text.find(";", i)
        if j == -1 or (k != -1 and k < j):
            text = text[:i] + text[k + 1:]
            continue
        depth, e = 0, j
        while e < len(text):
            if text[e] == "{":
                depth += 1
            elif text[e] == "}":
                depth -= 1
                if depth == 0:
                    break
            e += 1
        text = text[:i] + text[e + 1:]


def resolve(path, known):
    path = [p for p in path if p and p != "self"]
    for n in range(len(path), -1, -1):
        c = "::".join(path[:n])
        if c in known:
            return c
    return None


def imports(mod, text, known, via=None):
    text = re.sub(r"//[^\n]*", "", without_tests(text))
    parts = mod.split("::") if mod else []
    via = via or {}
    out = set()

    def root_path(path):
        if len(path) == 1 and path[0] in via:
            return via[path[0]]
        return resolve(path, known)

    for m in re.finditer(r"\bcrate::\{([^}]*)\}", text):
        for item in m.group(1).split(","):
            if item.strip():
                out.add(root_path(item.strip().split("::")))
    for m in re.finditer(r"\bcrate((?:::" + IDENT + r")+)", text):
        out.add(root_path(m.group(1).strip(":").split("::")))
    pat = r"\b((?:super::)+)(\{[^}]*\}|" + IDENT + r"(?:::" + IDENT + r")*)"
    for m in re.finditer(pat, text):
        ups = m.group(1).count("super::")
        base = parts[: len(parts) - ups] if ups <= len(parts) else []
        tail = m.group(2)
        items = tail.strip("{}").split(",") if tail.startswith("{") else [tail]
        for it in items:
            if it.strip():
                out.add(resolve(base + it.strip().split("::"), known))
    out.discard(None)
    out.discard(mod)
    return out


def graph(crate):
    mods = modules(os.path.join(CRATES, crate, "src"))
    tests = cfg_test_children(mods) | {m for m, p in mods.items() if test_only(p)}
    nodes = sorted(m for m in mods if m not in tests)
    via = reexports(mods, mods) if REEXPORTS else {}
    edges = {m: imports(m, open(mods[m]).read(), mods, via) & set(nodes) for m in nodes}
    return nodes, edges, tests


def name(m):
    return m or "lib"


def section(text, title):
    m = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def suggest(nodes, edges):
    """Floors from the imports: a module sits above everything it imports
    (circles, if any, share a floor)."""
    height = {}

    def h(m, seen):
        if m in height:
            return height[m]
        if m in seen:
            return 0
        seen.add(m)
        v = 1 + max((h(t, seen) for t in edges[m]), default=-1)
        seen.discard(m)
        height[m] = v
        return v

    for m in nodes:
        h(m, set())
    floors = defaultdict(list)
    for m in nodes:
        floors[height[m]].append(name(m))
    return " > ".join(", ".join(sorted(floors[k])) for k in sorted(floors, reverse=True))


def main():
    crates = sorted(
        c for c in os.listdir(CRATES) if os.path.isdir(os.path.join(CRATES, c, "src"))
    )
    if "--suggest" in sys.argv:
        for c in crates:
            nodes, edges, _ = graph(c)
            print(f"{c}: {suggest(nodes, edges)}")
        return 0
    text = open(README).read()
    declared = {}
    for line in section(text, "Floors").splitlines():
        m = re.match(r"^(cowkit[\w-]*): (.+)$", line.strip().strip("`"))
        if m:
            declared[m.group(1)] = [
                [x.strip() for x in f.split(",") if x.strip()] for f in m.group(2).split(">")
            ]
    allowed = set()
    for line in section(text, "Upward imports").splitlines():
        m = re.match(r"^- `?(cowkit[\w-]*): ([\w:]+) -> ([\w:]+)`?: .+$", line.strip())
        if m:
            allowed.add((m.group(1), m.group(2), m.group(3)))
    bad, up_total = [], 0
    for c in crates:
        nodes, edges, tests = graph(c)
        if c not in declared:
            bad.append(f"{c}: no line in crates/README.md's \"## Floors\"")
            continue
        floor = {}
        for i, f in enumerate(declared[c]):
            for m in f:
                if m in floor:
                    bad.append(f"{c}: `{m}` is on two floors")
                floor[m] = i
        for m in nodes:
            if name(m) not in floor:
                bad.append(f"{c}: module `{name(m)}` is on no floor")
        for m in floor:
            if m in tests:
                bad.append(f"{c}: floor names `{m}`, a unit-test module: leave it off the floors")
            elif m != "lib" and m not in nodes:
                bad.append(f"{c}: floor names `{m}`, which is not a module")
        for m in nodes:
            for t in sorted(edges[m]):
                a, b = floor.get(name(m)), floor.get(name(t))
                if a is None or b is None or b > a:
                    continue
                up_total += 1
                if (c, name(m), name(t)) not in allowed:
                    where = "the same floor" if a == b else "a higher floor"
                    bad.append(f"{c}: `{name(m)}` imports `{name(t)}`, on {where}")
    for b in bad:
        print(b)
    print(f"check-floors: {up_total} upward import(s), {len(allowed)} named in \"## Upward imports\"")
    if bad:
        print("check-floors: an import runs up a floor; move the thing down, or fix the floors")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
