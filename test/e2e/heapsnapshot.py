#!/usr/bin/env python3
"""heapsnapshot.py: an independent reader of our .heapsnapshot documents.

usage: heapsnapshot.py FILE [RETAINED_OUT]
       heapsnapshot.py --all FILE...   (check each, one summary line per file)

Parses FILE with Python's json, checks it the way a V8 heap snapshot loader
would (meta fields and types, node_count and edge_count against the arrays,
every node's edge_count summing to the edges, to_node pointing at a node start,
name indexes inside strings, the root's "(GC roots)" child), checks that the
graph is a tree below the root (every other node reached exactly once), and
prints one JSON line:

  {"nodes": N, "edges": N, "objects": N, "sizes": {name: summed self_size of
   the object nodes so named}, "counts": {name: object nodes}, "ones": bool
   (every object's self_size is 1), "retained": {"main;fill": bytes, ...}
   (retained size of each frame path, by function names from the outermost)}

With RETAINED_OUT, also writes {"node_count", "edge_count", "retained": {id:
bytes}} for every frame node, for test/e2e/heapsnapshot_memlab.js to compare.
Exit status 1 (with the reason on stderr) when a check fails.
"""
import json
import re
import sys

NODE_FIELDS = ["type", "name", "id", "self_size", "edge_count", "trace_node_id", "detachedness"]
NODE_TYPES = ["hidden", "array", "string", "object", "code", "closure", "regexp", "number",
              "native", "synthetic", "concatenated string", "sliced string", "symbol", "bigint",
              "object shape"]
EDGE_FIELDS = ["type", "name_or_index", "to_node"]
EDGE_TYPES = ["context", "element", "property", "internal", "hidden", "shortcut", "weak"]


CUR = ""  # the file being checked


def fail(msg):
    sys.stderr.write("heapsnapshot.py: %s: %s\n" % (CUR, msg))
    sys.exit(1)


def main():
    if sys.argv[1] == "--all":
        for name in sys.argv[2:]:
            check(name, None)
    else:
        check(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)


def check(path, retained_out):
    global CUR
    CUR = path
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))  # strict: the text must be UTF-8
    keys = list(doc.keys())
    want = ["snapshot", "nodes", "edges", "trace_function_infos", "trace_tree", "samples",
            "locations", "strings"]
    if keys != want:
        fail("top-level keys %s, want %s" % (keys, want))
    snap, meta = doc["snapshot"], doc["snapshot"]["meta"]
    if meta["node_fields"] != NODE_FIELDS or meta["node_types"][0] != NODE_TYPES:
        fail("node meta %s" % meta["node_fields"])
    if meta["edge_fields"] != EDGE_FIELDS or meta["edge_types"][0] != EDGE_TYPES:
        fail("edge meta %s" % meta["edge_fields"])
    for k in ("trace_function_info_fields", "trace_node_fields", "sample_fields",
              "location_fields"):
        if k not in meta:
            fail("meta has no " + k)
    nodes, edges, strings = doc["nodes"], doc["edges"], doc["strings"]
    nf, ef = len(NODE_FIELDS), len(EDGE_FIELDS)
    nn, ne = snap["node_count"], snap["edge_count"]
    if len(nodes) != nn * nf:
        fail("node_count %d but %d numbers in nodes" % (nn, len(nodes)))
    if len(edges) != ne * ef:
        fail("edge_count %d but %d numbers in edges" % (ne, len(edges)))
    if sum(nodes[i * nf + 4] for i in range(nn)) != ne:
        fail("the nodes' edge_counts do not sum to edge_count")
    if any(not isinstance(x, int) or x < 0 or x > 0xFFFFFFFF for x in nodes + edges):
        fail("a number is not a 32-bit unsigned integer")
    if strings[0] != "":
        fail("strings[0] is not empty")

    # Walk the graph: node ordinal -> (first edge, edge count).
    first, at = [], 0
    for i in range(nn):
        first.append(at)
        at += nodes[i * nf + 4]
    ids, seen = set(), [0] * nn
    for i in range(nn):
        t, name, nid = nodes[i * nf], nodes[i * nf + 1], nodes[i * nf + 2]
        if t >= len(NODE_TYPES) or name >= len(strings):
            fail("node %d: type %d name %d out of range" % (i, t, name))
        if nid in ids:
            fail("node id %d twice" % nid)
        ids.add(nid)
    for e in range(ne):
        t, name, to = edges[e * ef:e * ef + 3]
        if t >= len(EDGE_TYPES) or to % nf or to >= len(nodes):
            fail("edge %d: type %d to_node %d" % (e, t, to))
        if EDGE_TYPES[t] == "property" and name >= len(strings):
            fail("edge %d: name %d out of range" % (e, name))
        seen[to // nf] += 1
    kids = [[edges[(first[i] + k) * ef + 2] // nf for k in range(nodes[i * nf + 4])]
            for i in range(nn)]
    if not any(strings[nodes[c * nf + 1]] == "(GC roots)" for c in kids[0]):
        fail("the root has no (GC roots) child")
    if seen[0] != 0 or any(seen[i] != 1 for i in range(1, nn)):
        fail("not a tree: some node has %s retainers" % sorted(set(seen[1:])))

    # Retained sizes: in a tree, the subtree sums.  Iterative post-order.
    retained = [nodes[i * nf + 3] for i in range(nn)]
    order, stack = [], [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(kids[i])
    if len(order) != nn:
        fail("%d of %d nodes reachable from the root" % (len(order), nn))
    for i in reversed(order):
        for c in kids[i]:
            retained[i] += retained[c]
    def fn(name):
        # Frame nodes are named as the text views print a frame, "File:Line;
        # Function" or "[object] Function": the function is what is compared.
        return re.sub(r"^(\[[^]]*\] |[^;]*:\d+; |[^;]*; )", "", name)

    paths = {0: ""}
    for i in order:
        for c in kids[i]:
            if NODE_TYPES[nodes[c * nf]] == "object":  # a frame
                nm = fn(strings[nodes[c * nf + 1]])
                paths[c] = paths[i] + ";" + nm if paths[i] else nm

    sizes, counts, ones, nobj = {}, {}, True, 0
    for i in range(nn):
        if NODE_TYPES[nodes[i * nf]] != "native":
            continue
        nm, sz = fn(strings[nodes[i * nf + 1]]), nodes[i * nf + 3]
        sizes[nm] = sizes.get(nm, 0) + sz
        counts[nm] = counts.get(nm, 0) + 1
        ones = ones and sz == 1
        nobj += 1
    by_path = {}
    for i, p in paths.items():
        if i:
            by_path[p] = by_path.get(p, 0) + retained[i]
    print(json.dumps({"nodes": nn, "edges": ne, "objects": nobj, "sizes": sizes,
                      "counts": counts, "ones": ones, "retained": by_path}))
    if retained_out:
        with open(retained_out, "w") as f:
            json.dump({"node_count": nn, "edge_count": ne,
                       "retained": {str(nodes[i * nf + 2]): retained[i] for i in paths}}, f)


if __name__ == "__main__":
    main()
