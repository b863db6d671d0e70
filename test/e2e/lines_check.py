#!/usr/bin/env python3
"""lines_check: a profile's names, files, lines and inline chains against
llvm-symbolizer --inlining (the truth), for the locations in the objects named.

  lines_check.py GOLINES_OUTPUT OBJECT_PATH_SUFFIX... [--min-inner 99] [--min-chain 95]
                 [--min-locs 8]

GOLINES_OUTPUT is what test/e2e/golines printed for one profile.  For each
location of a mapping whose file ends with one of the suffixes, the address in
the object (address - mapping start + file offset) is given to llvm-symbolizer
with --no-demangle, and compared with the location's lines (innermost first):
the function (the system name, less GCC's clone suffixes and symbol
versions; two names of one address in the symbol tables, an alias such as
malloc and __libc_malloc, are one function), the file and the line.  Prints
the figures; exit 1 when the share with the same innermost frame or the same
whole chain is below its minimum, or when too few locations were compared.
"""
import re
import subprocess
import sys


def norm_name(n):
    n = re.sub(r"@.*$", "", n)  # symbol versions: __libc_start_main@@GLIBC_2.34
    n = re.sub(r"(\.(isra|constprop|part|cold|lto_priv|localalias)(\.\d+)?)+$", "", n)
    return n


def symbol_addrs(obj):
    """name -> address, from the object's symbol tables and its debug file's."""
    files = [obj]
    bid = subprocess.run(["readelf", "-n", obj], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", bid)
    if m:
        files.append("/usr/lib/debug/.build-id/%s/%s.debug" % (m.group(1)[:2], m.group(1)[2:]))
    addrs = {}
    for f in files:
        out = subprocess.run(["readelf", "-sW", f], capture_output=True, text=True).stdout
        for line in out.split("\n"):
            p = line.split()
            if len(p) >= 8 and p[3] in ("FUNC", "IFUNC"):
                addrs.setdefault(norm_name(p[7]), int(p[1], 16))
    return addrs


def same(ours, truth, addrs):
    if ours == truth:
        return True
    if len(ours) != len(truth):
        return False
    for (on, of, ol), (tn, tf, tl) in zip(ours, truth):
        if (of, ol) != (tf, tl):
            return False
        if on != tn and (on not in addrs or addrs.get(on) != addrs.get(tn)):
            return False
    return True


def main():
    args = [a for a in sys.argv[1:]]
    mins = {"--min-inner": 99.0, "--min-chain": 95.0, "--min-locs": 8}
    for k in list(mins):
        if k in args:
            i = args.index(k)
            mins[k] = float(args[i + 1])
            del args[i : i + 2]
    path, suffixes = args[0], args[1:]
    locs, cur = [], None
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "L":
            cur = {"file": f[1], "start": int(f[2], 16), "off": int(f[4], 16),
                   "addr": int(f[5], 16), "lines": []}
            locs.append(cur)
        elif f[0] == "F" and cur is not None:
            cur["lines"].append((norm_name(f[2] or f[1]), f[3], int(f[4])))
    by_obj = {}
    for l in locs:
        if any(l["file"].endswith(s) for s in suffixes) and l["lines"]:
            by_obj.setdefault(l["file"], []).append(l)
    n = inner_ok = chain_ok = 0
    shown = 0
    for obj, ls in sorted(by_obj.items()):
        syms = symbol_addrs(obj)
        addrs = ["0x%x" % (l["addr"] - l["start"] + l["off"]) for l in ls]
        out = subprocess.run(["llvm-symbolizer", "--inlining", "--no-demangle", "--obj=" + obj],
                             input="\n".join(addrs) + "\n", capture_output=True, text=True,
                             check=True).stdout
        blocks = [b for b in out.split("\n\n") if b.strip()]
        for l, a, b in zip(ls, addrs, blocks):
            rows = b.strip().split("\n")
            truth = []
            for i in range(0, len(rows) - 1, 2):
                m = re.match(r"^(.*):(\d+):(\d+)$", rows[i + 1])
                fn, ln = (m.group(1), int(m.group(2))) if m else (rows[i + 1], 0)
                truth.append((norm_name(rows[i]), fn, ln))
            truth = [(a, '' if b == '??' else b, c) for a, b, c in truth]
            if not truth or truth[0][0] == "??":
                continue
            n += 1
            ours = l["lines"]
            ok1 = same(ours[:1], truth[:1], syms) if len(ours) == 1 or len(truth) == 1 else \
                same([ours[0]], [truth[0]], syms)
            okc = same(ours, truth, syms)
            inner_ok += ok1
            chain_ok += okc
            if not okc and shown < 8:
                shown += 1
                print("differs at %s %s:\n  ours  %s\n  truth %s" % (obj, a, ours, truth))
    pin = 100.0 * inner_ok / n if n else 0
    pch = 100.0 * chain_ok / n if n else 0
    print("lines: %d locations: innermost frame the same in %.1f%%, whole inline chain in %.1f%%"
          % (n, pin, pch))
    sys.exit(0 if n >= mins["--min-locs"] and pin >= mins["--min-inner"] and pch >= mins["--min-chain"] else 1)


if __name__ == "__main__":
    main()
