// The parallel lane's order: as listed in test/integration-lanes.txt (longest suites first, so the two workers
// finish at about the same time instead of one running a long suite alone at the end). jest's own order (by the
// durations of an earlier run on this machine, else by file size) would put them anywhere on a fresh clone.
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;
const { readLanes, ROOT } = require('./lanes');

class LaneSequencer extends Sequencer {
  sort(tests) {
    const order = new Map(readLanes().parallel.map((p, i) => [path.join(ROOT, p), i]));
    const rank = (t) => order.get(t.path) ?? Number.MAX_SAFE_INTEGER;
    return [...tests].sort((a, b) => rank(a) - rank(b) || a.path.localeCompare(b.path));
  }
}

module.exports = LaneSequencer;
