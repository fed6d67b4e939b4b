#!/usr/bin/env python3
"""Usage: LIMIT=150 python3 .ci/fn-lengths.py [paths...]

Counts the lines of every `fn` body under the given paths (brace matching, skipping
strings, chars and comments). Prints `lines path:line name` for functions over LIMIT."""
import re, sys, os
LIMIT = int(os.environ.get("LIMIT", "150"))

def strip(src):
    # comments, strings and chars become spaces; newlines stay, so line numbers hold
    out = []; i = 0; n = len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i); j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            depth = 1; j = i + 2
            while j < n and depth:
                if src.startswith("/*", j): depth += 1; j += 2
                elif src.startswith("*/", j): depth -= 1; j += 2
                else: j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif c == 'r' and re.match(r'r#*"', src[i:i+10]) and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_')):
            m = re.match(r'r(#*)"', src[i:]); hashes = m.group(1)
            end = src.find('"' + hashes, i + len(m.group(0)))
            j = end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                out.append(" " * len(m.group(0))); i += len(m.group(0))
            else:
                out.append(c); i += 1
        else:
            out.append(c); i += 1
    return "".join(out)

def functions(path):
    src = strip(open(path).read())
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", src):
        # find the body's opening brace (or a `;` for a declaration)
        j = m.end(); depth = 0
        while j < len(src):
            ch = src[j]
            if ch in "(<[": depth += 1
            elif ch in ")>]": depth -= 1 if not (ch == '>' and src[j-1] == '-') else 0
            elif ch == ';' and depth <= 0: j = -1; break
            elif ch == '{' and depth <= 0: break
            j += 1
        if j < 0 or j >= len(src): continue
        k = j; d = 0
        while k < len(src):
            if src[k] == '{': d += 1
            elif src[k] == '}':
                d -= 1
                if d == 0: break
            k += 1
        start = src.count("\n", 0, m.start()) + 1
        end = src.count("\n", 0, k) + 1
        yield start, end - start + 1, m.group(1)

def main():
    paths = sys.argv[1:] or ["src"]
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, fs in os.walk(p):
                files += [os.path.join(root, f) for f in fs if f.endswith(".rs")]
        else: files.append(p)
    hits = []
    for f in sorted(files):
        for line, length, name in functions(f):
            if length > LIMIT: hits.append((length, f"{f}:{line}", name))
    for h in sorted(hits, reverse=True): print(*h)
    print(f"{len(hits)} functions over {LIMIT} lines")
main()
