#!/usr/bin/env python3
"""got_check.py: a process's relocation slots and mapping protections, read
from outside (/proc/PID/maps, /proc/PID/mem, readelf on each object's file).

  got_check.py snap PID FILE [REF] every R_X86_64_JUMP_SLOT and GLOB_DAT slot of
                                   every file-backed object, and every mapping
                                   (range, permissions) of those objects; with
                                   REF (an earlier snap), objects at REF's load
                                   addresses (a file mapped again since, e.g. to
                                   read its symbols, is not the loaded object)
  got_check.py same FILE1 FILE2    exit 0 when every slot and mapping of FILE1
                                   is in FILE2 unchanged (objects loaded since
                                   are ignored); else list what differs, exit 1
  got_check.py differ FILE1 FILE2  print how many slots of FILE1 differ in FILE2
"""
import json
import re
import subprocess
import sys


def objects(pid):
    """path -> (list of (lo, hi, perms), lowest address of an offset-0 mapping)"""
    objs = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            path = " ".join(parts[5:])
            if path.endswith("(deleted)") or path.startswith("/dev/") or path.startswith("/memfd"):
                continue
            o = objs.setdefault(path, {"maps": [], "start": None})
            o["maps"].append([lo, hi, parts[1]])
            if int(parts[2], 16) == 0 and (o["start"] is None or lo < o["start"]):
                o["start"] = lo
    return objs


def first_load(path):
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*LOAD\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", line)
        if m:
            return int(m.group(1), 16)
    return None


def slots(path):
    out = subprocess.run(["readelf", "-rW", path], capture_output=True, text=True).stdout
    res = []
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 3 and p[2] in ("R_X86_64_JUMP_SLOT", "R_X86_64_GLOB_DAT"):
            res.append((int(p[0], 16), p[4] if len(p) > 4 else "?"))
    return res


def snap(pid, out, ref=None):
    data = {}
    bases = {}
    if ref:
        with open(ref) as f:
            bases = {p: o["base"] for p, o in json.load(f).items()}
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for path, o in objects(pid).items():
            if o["start"] is None:
                continue
            fl = first_load(path)
            if fl is None:
                continue
            base = bases.get(path, o["start"] - (fl & ~0xFFF))
            vals = {}
            for off, name in slots(path):
                try:
                    mem.seek(base + off)
                    vals[f"{off:x} {name}"] = int.from_bytes(mem.read(8), "little")
                except OSError:
                    pass
            data[path] = {"maps": o["maps"], "slots": vals, "base": base}
    with open(out, "w") as f:
        json.dump(data, f)


def compare(a, b, quiet=False):
    with open(a) as f:
        x = json.load(f)
    with open(b) as f:
        y = json.load(f)
    diffs = []
    nslots = 0
    for path, o in x.items():
        if path not in y:
            diffs.append(f"{path}: gone")
            continue
        # every mapping as it was (a file mapped again since, e.g. read for
        # its symbols, is a mapping more, not a change)
        gone = [m for m in o["maps"] if m not in y[path]["maps"]]
        if gone:
            diffs.append(f"{path}: mappings {gone} not as before: now {y[path]['maps']}")
        for k, v in o["slots"].items():
            nslots += 1
            w = y[path]["slots"].get(k)
            if w != v:
                diffs.append(f"{path}: slot {k}: {v:#x} -> {w:#x}" if w is not None else f"{path}: slot {k} unread")
    return nslots, diffs


def main():
    if len(sys.argv) in (4, 5) and sys.argv[1] == "snap":
        snap(int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
        return 0
    if len(sys.argv) == 4 and sys.argv[1] in ("same", "differ"):
        n, d = compare(sys.argv[2], sys.argv[3])
        if sys.argv[1] == "differ":
            print(sum(1 for s in d if ": slot " in s))
            return 0
        if d:
            print(f"{len(d)} of {n} slots/objects differ:")
            for s in d[:20]:
                print("  " + s)
            return 1
        print(f"{n} slots and every mapping as before")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
