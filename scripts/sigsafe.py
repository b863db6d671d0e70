#!/usr/bin/env python3
# sigsafe.py: the transitive PE_SIGSAFE check behind scripts/lint.sh.
#
# Reads every C file of the library's modules, finds each function definition
# (and each macro, taken as the calls it expands to), and walks the calls from
# the roots lint.sh names: the signal handlers, the malloc family's entry
# points, and every function declared PE_SIGSAFE.  Along the way:
#   - a function of ours that is not static must be declared PE_SIGSAFE: its
#     header is the contract others read (static helpers are walked into and
#     need no mark: this walk is what vouches for them);
#   - a function that is not ours must be on the safe list (signal-safety(7),
#     plus the system-call wrappers and libunwind's local unwinder lint.sh
#     names), else it is reported;
#   - an edge "caller>callee" on the allowed list is not followed (a branch the
#     handler never takes, with its reason written beside it in lint.sh).
# Calls through pointers (a struct member, a callback argument) are not
# followed: what they point to is judged where it is defined.  Only the names
# matter, not the paths taken: a false alarm is silenced by an allowed edge
# with its reason, never by dropping a root.
#   sigsafe.py ROOTS SAFE ALLOWED
# ROOTS: "kind:file:function ..."; SAFE: names; ALLOWED: "caller>callee ..."
# (shell patterns: "*>pe_x_*" is every call of a pe_x_ function).
# Exit 1 with one "lint:" line per finding, else 0.
import fnmatch
import glob
import re
import sys

KW = set("""if while for switch return sizeof typeof __typeof__ defined do else case goto
    alignof _Alignof __alignof__ _Static_assert static_assert __attribute__ __asm__ asm
    __volatile__ volatile offsetof va_arg va_start va_end __builtin_va_arg _Generic int long
    char short unsigned signed void float double const struct union enum ElfW""".split())


def strip(src):
    """Comments, strings and character literals blanked; newlines kept."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


funcs, macros, marked = {}, {}, set()  # marked: (file, name) of each PE_SIGSAFE
files = sorted(f for d in ("preload", "symbols", "stack", "sink", "profile", "proto", "render", "trace",
                           "sampler", "contention", "heap", "http")
               for f in glob.glob(d + "/*.[ch]"))
call_re = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*\(")
head_re = re.compile(r"\b(\w+)\s*\(([^()]|\([^()]*\))*\)\s*(__attribute__\s*\(\(.*?\)\)\s*)*$", re.S)
for f in files:
    s = re.sub(r"\\\n", " ", strip(open(f, errors="replace").read()))
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)(\([^)]*\))?(.*)$", s, re.M):
        macros.setdefault(m.group(1), m.group(3))
    s = re.sub(r"^\s*#.*$", "", s, flags=re.M)
    for m in re.finditer(r"PE_SIGSAFE\b[^;{}]*?\b(\w+)\s*\(", s):
        marked.add((f, m.group(1)))
    depth, last, i, n = 0, 0, 0, len(s)
    while i < n:
        c = s[i]
        if c == "{" and depth == 0:
            head, d, j = s[last:i], 0, i
            while j < n:
                d += {"{": 1, "}": -1}.get(s[j], 0)
                if d == 0:
                    break
                j += 1
            hm = head_re.search(head)
            if hm and hm.group(1) not in KW and "=" not in head[: hm.start()]:
                static = bool(re.search(r"\bstatic\b", head))
                funcs.setdefault(hm.group(1), []).append((f, s[i : j + 1], static))
            i = last = j + 1
            continue
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == ";" and depth == 0:
            last = i + 1
        i += 1



def is_marked(d, name):
    """A static function is marked in its own file; one with external linkage
    in its header (or anywhere)."""
    return (d[0], name) in marked or (not d[2] and any(n == name for _, n in marked))


def resolve(name, caller_file):
    """The definition a call from caller_file reaches: a static one of that file,
    else a static inline of a header, else the one with external linkage."""
    defs = funcs.get(name, [])
    for pick in (lambda d: d[0] == caller_file, lambda d: d[2] and d[0].endswith(".h"),
                 lambda d: not d[2]):
        for d in defs:
            if pick(d):
                return d
    return None


safe = set(sys.argv[2].split())
allowed = set(sys.argv[3].split())
roots = []
for r in sys.argv[1].split():
    kind, _, rest = r.partition(":")
    f, _, name = rest.rpartition(":")
    roots.append((kind, name, f))
roots += [("PE_SIGSAFE " + n, n, d[0]) for f, n in sorted(marked) for d in funcs.get(n, [])
          if d[0] == f or (not d[2] and f.endswith(".h"))]
root_names = {r[1] for r in roots}
bad, reported = 0, set()
for kind, root, rfile in roots:
    if not resolve(root, rfile):
        print(f"lint: sigsafe root {root} ({kind}) is not defined in {rfile}")
        bad += 1
        continue
    seen, todo = set(), [(root, rfile, [root])]
    while todo:
        fn, cfile, path = todo.pop()
        d = resolve(fn, cfile)
        key = (fn, d[0] if d else "")
        if key in seen:
            continue
        seen.add(key)
        if fn in safe or fn.startswith(("__atomic_", "__builtin_")):
            continue  # libc's (our interposer of the same name is not what we call)
        if d:
            where, body, static = d
            if fn not in root_names and not static and not is_marked(d, fn) and key not in reported:
                reported.add(key)
                print(f"lint: {where}: {fn} is reached from {kind} ({' -> '.join(path)}) "
                      "but not declared PE_SIGSAFE")
                bad += 1
        elif fn in macros:
            body, where = macros[fn], cfile
        else:
            if fn not in reported:
                reported.add(fn)
                print(f"lint: {kind} reaches {fn}, which is neither ours nor on the safe "
                      f"list ({' -> '.join(path)})")
                bad += 1
            continue
        for m in call_re.finditer(body):
            c = m.group(1)
            if (c not in KW and not c.endswith("_t")
                    and not any(fnmatch.fnmatchcase(fn + ">" + c, a) for a in allowed)):
                todo.append((c, where, path + [c]))
sys.exit(1 if bad else 0)
