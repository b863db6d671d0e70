// heapsnapshot_memlab.js: load one of our .heapsnapshot files with memlab's
// heap snapshot parser (@memlab/core, the loader behind `memlab analyze` and
// @memlab/heap-analysis), let memlab compute dominators and retained sizes,
// and compare them with ours (test/e2e/heapsnapshot.py's RETAINED_OUT file).
//
// usage: node heapsnapshot_memlab.js MODULES_DIR SNAPSHOT RETAINED_JSON
// Prints "RESULT {json}" and exits 1 on any mismatch, 2 when memlab throws.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [modules, file, oursFile] = process.argv.slice(2);
  const core = require(path.join(modules, '@memlab', 'core'));
  const ours = JSON.parse(fs.readFileSync(oursFile, 'utf8'));
  const snap = await core.utils.getSnapshotFromFile(file, {});
  new core.TraceFinder().calculateAllNodesRetainedSizes(snap);
  let compared = 0;
  let mismatched = 0;
  const examples = [];
  for (const [id, want] of Object.entries(ours.retained)) {
    const node = snap.getNodeById(Number(id));
    compared++;
    if (!node || node.retainedSize !== want) {
      mismatched++;
      if (examples.length < 5) {
        examples.push({id, want, got: node ? node.retainedSize : null, name: node && node.name});
      }
    }
  }
  // Per allocation site, as a memlab user would sum them.
  const sites = {};
  snap.nodes.forEach(node => {
    if (node.type === 'native') {
      // named as the text views print a frame: "File:Line; Function" or "[object] Function"
      const fn = node.name.replace(/^(\[[^\]]*\] |[^;]*:\d+; |[^;]*; )/, '');
      sites[fn] = (sites[fn] || 0) + node.self_size;
    }
  });
  const res = {
    nodes: snap.nodes.length,
    edges: snap.edges.length,
    root_retained: snap.nodes.get(0).retainedSize,
    compared,
    mismatched,
    examples,
    sites,
  };
  process.stdout.write('\nRESULT ' + JSON.stringify(res) + '\n');
  const ok = res.nodes === ours.node_count && res.edges === ours.edge_count && mismatched === 0 &&
      compared > 0;
  process.exit(ok ? 0 : 1);
}

main().catch(e => {
  process.stderr.write('memlab failed: ' + (e && e.stack || e) + '\n');
  process.exit(2);
});
