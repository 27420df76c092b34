#!/usr/bin/env python3
"""Check that the maps of the tree name everything in it (CI runs this).

  python3 scripts/check-maps.py

- `crates/README.md`: the row of each crate (`| \`crate\` | ...`) names
  every module of the crate, in backticks: `src/a/b.rs` is the module
  `a::b`, named as `a::b`, as `b`, or as the path `src/a/b.rs` (`b.rs`);
  a name with `::` also names its prefixes (`scoped::Session` names
  `scoped`), and the crate's own path (`cowkit_fs::dir`) may lead. Crate
  roots (`lib.rs`, `main.rs`) and unit-test files (`tests.rs`, the tests of
  their parent module) are not asked for.
- `docs/testing.md`: names, in backticks and by their path from the
  repository root, every test file: `crates/*/tests/*.rs`, the Python
  client tests `crates/*/tests/**/*.py`, and every file in `scripts/`.

Prints what is missing, one line each, and exits 1 if anything is.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TICKED = re.compile(r"`([^`\n]+)`")


def crate_rows(text):
    """The crates table of crates/README.md: crate name -> its row."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*`([a-z0-9-]+)`\s*\|", line)
        if m:
            rows[m.group(1)] = line
    return rows


def names_in(row, crate):
    """Every module name the backticked words of `row` stand for."""
    lib = crate.replace("-", "_")
    names = set()
    for word in TICKED.findall(row):
        word = word.strip()
        if word.endswith(".rs"):
            word = word.removeprefix("src/")[: -len(".rs")].replace("/", "::")
        if word.startswith(lib + "::"):
            word = word[len(lib) + 2 :]
        parts = word.split("::")
        names.update("::".join(parts[: i + 1]) for i in range(len(parts)))
    return names


def modules(crate_dir):
    """The modules of a crate and their files: `a::b` for `src/a/b.rs` or
    `src/a/b/mod.rs`."""
    out = []
    for f in sorted((crate_dir / "src").rglob("*.rs")):
        rel = f.relative_to(crate_dir / "src").with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "mod":
            parts.pop()
        if parts in (["lib"], ["main"]) or parts[-1] == "tests":
            continue
        out.append(("::".join(parts), str(f.relative_to(ROOT))))
    return out


def missing_modules():
    text = (ROOT / "crates/README.md").read_text()
    rows = crate_rows(text)
    missing = []
    for crate_dir in sorted(p for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists()):
        crate = crate_dir.name
        row = rows.get(crate)
        if row is None:
            missing.append(f"crates/README.md: no row for the crate `{crate}`")
            continue
        named = names_in(row, crate)
        for m, path in modules(crate_dir):
            if m not in named and m.split("::")[-1] not in named:
                missing.append(f"crates/README.md: `{crate}` does not name its module `{m}` ({path})")
    return missing


def test_files():
    files = list((ROOT / "crates").glob("*/tests/*.rs"))
    files += (ROOT / "crates").glob("*/tests/**/*.py")
    files += [p for p in (ROOT / "scripts").iterdir() if p.is_file()]
    return sorted(str(p.relative_to(ROOT)) for p in files)


def missing_tests():
    named = set(TICKED.findall((ROOT / "docs/testing.md").read_text()))
    return [f"docs/testing.md: does not name the test file `{f}`" for f in test_files() if f not in named]


def main():
    missing = missing_modules() + missing_tests()
    for line in missing:
        print(line)
    if missing:
        print(f"check-maps: {len(missing)} missing; add them to the maps", file=sys.stderr)
        return 1
    print("check-maps: every module is in crates/README.md, every test file in docs/testing.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
