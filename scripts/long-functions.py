#!/usr/bin/env python3
"""List the Rust functions longer than a limit (default 100 lines).

    python3 scripts/long-functions.py [--limit N] [--tests] [--summary] [PATH...]

A function's length is the number of lines from its `fn` line to its closing
brace, both included (what an editor shows). PATHs are files or directories
(default: `crates`); without `--tests`, only library and binary source is
read: `tests/` directories, `#[cfg(test)]` modules and `#[test]` functions are
skipped. The scan is lexical (comments, strings, raw strings and character
literals are skipped when matching braces), which is exact for rustfmt'd code.
Output: `LINES PATH:LINE NAME`, longest first; `--summary` prints only the
count. Exit status 0 always: this is a report, not a gate.
"""

import argparse
import os
import re
import sys

FN = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
    r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)"
)
CFG_TEST = re.compile(r"^\s*#\[cfg\((?:all\()?test\b")
TEST_ATTR = re.compile(r"^\s*#\[(?:test|tokio::test\b[^\]]*)\]")


def strip_code(text):
    """`text` with comments, strings and char literals blanked out (same
    length and line breaks), so that braces can be counted."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif re.match(r'b?r#*"', text[i:i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', text[i:])
            end = '"' + m.group(2)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}', '{') or a lifetime ('a).
            m = re.match(r"'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", text[i:])
            if m:
                out.append(" " * m.end())
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(code, start):
    """Index of the `}` matching the `{` at `start`."""
    depth = 0
    for j in range(start, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def functions(path, with_tests):
    text = open(path, encoding="utf-8", errors="replace").read()
    code = strip_code(text)
    lines = code.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    line_of = lambda pos: next_line(offsets, pos)
    skip_until = -1
    pending_test = False
    for no, line in enumerate(lines):
        pos = offsets[no]
        if pos <= skip_until:
            continue
        if not with_tests and (CFG_TEST.match(line) or TEST_ATTR.match(line)):
            pending_test = True
            continue
        m = FN.match(line)
        item = m or re.match(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", line)
        if not item:
            if line.strip() and not line.lstrip().startswith("#"):
                pending_test = False
            continue
        # The body: the first `{` after the signature that is not inside
        # parentheses or angle brackets of the signature (a `;` first means
        # a declaration without a body).
        j, paren = pos + (m.end() if m else 0), 0
        while j < len(code):
            ch = code[j]
            if ch in "([":
                paren += 1
            elif ch in ")]":
                paren -= 1
            elif ch == ";" and paren == 0:
                j = -1
                break
            elif ch == "{" and paren == 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            pending_test = False
            continue
        end = block_end(code, j)
        if pending_test:
            skip_until = end
            pending_test = False
            continue
        if m:
            first, last = no + 1, line_of(end)
            yield (last - first + 1, first, m.group(1))


def next_line(offsets, pos):
    lo, hi = 0, len(offsets) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets[mid] <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def rust_files(paths, with_tests):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for d, subdirs, files in os.walk(p):
            subdirs[:] = sorted(
                s for s in subdirs
                if s != "target" and (with_tests or s not in ("tests", "benches"))
            )
            for f in sorted(files):
                if f.endswith(".rs"):
                    yield os.path.join(d, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--tests", action="store_true", help="count test code too")
    ap.add_argument("--summary", action="store_true", help="print only the count")
    ap.add_argument("paths", nargs="*", default=["crates"])
    a = ap.parse_args()
    long = []
    for f in rust_files(a.paths, a.tests):
        for n, line, name in functions(f, a.tests):
            if n > a.limit:
                long.append((n, f, line, name))
    long.sort(key=lambda r: (-r[0], r[1], r[2]))
    if not a.summary:
        for n, f, line, name in long:
            print(f"{n:5} {f}:{line} {name}")
    sys.stdout.flush()
    print(f"{len(long)} functions over {a.limit} lines", file=sys.stdout if a.summary else sys.stderr)


if __name__ == "__main__":
    main()
