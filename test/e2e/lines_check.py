#!/usr/bin/env python3
"""lines_check: a profile's names, files, lines and inline chains against
llvm-symbolizer --inlining (the truth), for the locations in the objects named.

  lines_check.py GOLINES_OUTPUT OBJECT_PATH_SUFFIX... [--min-inner 99] [--min-chain 95]

GOLINES_OUTPUT is what test/e2e/golines printed for one profile.  For each
location of a mapping whose file ends with one of the suffixes, the address in
the object (address - mapping start + file offset) is given to llvm-symbolizer
with --no-demangle, and compared with the location's lines (innermost first):
the function (the system name, less GCC's clone suffixes and symbol
versions), the file and the line.  Prints the figures; exit 1 when the share
with the same innermost frame or the same whole chain is below its minimum,
or when fewer than 20 locations were compared.
"""
import re
import subprocess
import sys


def norm_name(n):
    n = re.sub(r"@.*$", "", n)  # symbol versions: __libc_start_main@@GLIBC_2.34
    n = re.sub(r"(\.(isra|constprop|part|cold|lto_priv|localalias)(\.\d+)?)+$", "", n)
    return n


def main():
    args = [a for a in sys.argv[1:]]
    mins = {"--min-inner": 99.0, "--min-chain": 95.0}
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
            ok1 = ours[0] == truth[0]
            okc = ours == truth
            inner_ok += ok1
            chain_ok += okc
            if not okc and shown < 8:
                shown += 1
                print("differs at %s %s:\n  ours  %s\n  truth %s" % (obj, a, ours, truth))
    pin = 100.0 * inner_ok / n if n else 0
    pch = 100.0 * chain_ok / n if n else 0
    print("lines: %d locations: innermost frame the same in %.1f%%, whole inline chain in %.1f%%"
          % (n, pin, pch))
    sys.exit(0 if n >= 20 and pin >= mins["--min-inner"] and pch >= mins["--min-chain"] else 1)


if __name__ == "__main__":
    main()
