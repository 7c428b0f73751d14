// The integration suites' two lanes, read from test/integration-lanes.txt (docs/infrastructure.md, "The test
// command"): `parallel` suites may run beside one other suite, every other suite runs alone. Used by jest.config.js
// (LORE_TEST_LANE=parallel|serial picks a lane) and by scripts/test-all.sh (`node test/support/jest/lanes.js check`).
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..', '..');
const FILE = path.join(ROOT, 'test', 'integration-lanes.txt');

/**
 * `{ parallel: [paths in file order], serial: [paths], kube: [paths], problems: [messages] }`; paths relative to the
 * repository. `kube` lists the suites of either lane marked `kube` (they need the Kubernetes test control plane).
 */
function readLanes(file = FILE) {
  const parallel = [];
  const serial = [];
  const kube = [];
  const problems = [];
  const seen = new Map();
  fs.readFileSync(file, 'utf8').split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const [lane, suite, ...rest] = line.split(/\s+/);
    const needsKube = rest[0] === 'kube';
    const reason = needsKube ? rest.slice(1) : rest;
    const where = `${path.relative(ROOT, file)}:${i + 1}`;
    if (lane !== 'parallel' && lane !== 'serial') return void problems.push(`${where}: lane must be parallel or serial, not "${lane}"`);
    if (!suite) return void problems.push(`${where}: no suite named`);
    if (lane === 'serial' && reason.length === 0) problems.push(`${where}: a serial suite needs its reason`);
    if (lane === 'parallel' && reason.length > 0) problems.push(`${where}: a parallel suite takes only the word kube after it, not "${reason.join(' ')}"`);
    if (needsKube) kube.push(suite);
    if (seen.has(suite)) return void problems.push(`${where}: ${suite} is listed twice (also line ${seen.get(suite)})`);
    seen.set(suite, i + 1);
    if (!/\.int\.test\.ts$/.test(suite)) problems.push(`${where}: ${suite} is not an integration suite (*.int.test.ts)`);
    if (!fs.existsSync(path.join(ROOT, suite))) problems.push(`${where}: ${suite} does not exist`);
    (lane === 'parallel' ? parallel : serial).push(suite);
  });
  return { parallel, serial, kube, problems };
}

/**
 * LORE_TEST_KUBE: `without` leaves out the suites marked `kube`, `only` keeps just those; unset, every suite. The
 * test command runs the suites without Kubernetes while its control plane is still being built or started.
 */
function kubeMode() {
  const mode = process.env.LORE_TEST_KUBE;
  if (mode !== undefined && mode !== 'without' && mode !== 'only') throw new Error(`LORE_TEST_KUBE must be without or only, not "${mode}"`);
  return mode;
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Absolute-path patterns of these suites, for testPathIgnorePatterns. */
function ignorePatterns(suites) {
  return suites.map((p) => `^${escapeRegExp(path.join(ROOT, p))}$`);
}

/** The lane's suites kept by LORE_TEST_KUBE (`kube` marks them), in the file's order. */
function keptByKubeMode(suites, kube, mode = kubeMode()) {
  if (mode === undefined) return suites;
  const marked = new Set(kube);
  return suites.filter((s) => marked.has(s) === (mode === 'only'));
}

module.exports = { readLanes, ignorePatterns, keptByKubeMode, kubeMode, ROOT, FILE };

// `node test/support/jest/lanes.js check <integration suite>...`: prints the file's problems and the suites that
// are not listed (they run in the serial lane); exits 1 only for a malformed file.
if (require.main === module && process.argv[2] === 'check') {
  const { parallel, serial, kube, problems } = readLanes();
  const listed = new Set([...parallel, ...serial]);
  const unlisted = process.argv.slice(3).map((p) => path.relative(ROOT, path.resolve(ROOT, p))).filter((p) => !listed.has(p));
  for (const p of problems) console.error(`integration lanes: ${p}`);
  for (const p of unlisted) console.error(`integration lanes: ${p} is not in test/integration-lanes.txt, so it runs in the serial lane`);
  console.log(`integration lanes: ${parallel.length} parallel, ${serial.length + unlisted.length} serial (${unlisted.length} of them unlisted); ${kube.length} of them on Kubernetes`);
  process.exit(problems.some((p) => !p.endsWith('does not exist')) ? 1 : 0);
}
