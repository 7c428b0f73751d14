// The integration suites' two lanes, read from test/integration-lanes.txt (docs/infrastructure.md, "The test
// command"): `parallel` suites may run beside one other suite, every other suite runs alone. Used by jest.config.js
// (LORE_TEST_LANE=parallel|serial picks a lane) and by scripts/test-all.sh (`node test/support/jest/lanes.js check`).
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..', '..');
const FILE = path.join(ROOT, 'test', 'integration-lanes.txt');

/** `{ parallel: [paths in file order], serial: [paths], problems: [messages] }`; paths relative to the repository. */
function readLanes(file = FILE) {
  const parallel = [];
  const serial = [];
  const problems = [];
  const seen = new Map();
  fs.readFileSync(file, 'utf8').split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const [lane, suite, ...reason] = line.split(/\s+/);
    const where = `${path.relative(ROOT, file)}:${i + 1}`;
    if (lane !== 'parallel' && lane !== 'serial') return void problems.push(`${where}: lane must be parallel or serial, not "${lane}"`);
    if (!suite) return void problems.push(`${where}: no suite named`);
    if (lane === 'serial' && reason.length === 0) problems.push(`${where}: a serial suite needs its reason`);
    if (seen.has(suite)) return void problems.push(`${where}: ${suite} is listed twice (also line ${seen.get(suite)})`);
    seen.set(suite, i + 1);
    if (!/\.int\.test\.ts$/.test(suite)) problems.push(`${where}: ${suite} is not an integration suite (*.int.test.ts)`);
    if (!fs.existsSync(path.join(ROOT, suite))) problems.push(`${where}: ${suite} does not exist`);
    (lane === 'parallel' ? parallel : serial).push(suite);
  });
  return { parallel, serial, problems };
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Absolute-path patterns of the parallel suites, for the serial lane's testPathIgnorePatterns. */
function parallelIgnorePatterns() {
  return readLanes().parallel.map((p) => `^${escapeRegExp(path.join(ROOT, p))}$`);
}

module.exports = { readLanes, parallelIgnorePatterns, ROOT, FILE };

// `node test/support/jest/lanes.js check <integration suite>...`: prints the file's problems and the suites that
// are not listed (they run in the serial lane); exits 1 only for a malformed file.
if (require.main === module && process.argv[2] === 'check') {
  const { parallel, serial, problems } = readLanes();
  const listed = new Set([...parallel, ...serial]);
  const unlisted = process.argv.slice(3).map((p) => path.relative(ROOT, path.resolve(ROOT, p))).filter((p) => !listed.has(p));
  for (const p of problems) console.error(`integration lanes: ${p}`);
  for (const p of unlisted) console.error(`integration lanes: ${p} is not in test/integration-lanes.txt, so it runs in the serial lane`);
  console.log(`integration lanes: ${parallel.length} parallel, ${serial.length + unlisted.length} serial (${unlisted.length} of them unlisted)`);
  process.exit(problems.some((p) => !p.endsWith('does not exist')) ? 1 : 0);
}
