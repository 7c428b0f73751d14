import { join } from 'node:path';
import { heavyPackagesIn, modulesLoadedBy } from './testing/loaded-modules';

const REPO = join(__dirname, '..', '..');
// The way the project runs TypeScript sources (npm scripts, benchmarks): tsx with the lore-src condition.
const FROM_SOURCE = ['--conditions=lore-src', '--import', 'tsx'];

describe('the operator loads only the light runtime kit', () => {
  it('loads no PGlite, kafkajs, ioredis or pg when its entry module runs (it stops at the configuration check)', () => {
    const { files, status } = modulesLoadedBy(join(REPO, 'operator', 'src', 'main.ts'), FROM_SOURCE, REPO);
    expect(status).not.toBe(0);
    // It did load its own graph: the kit subpath and the Kubernetes client.
    expect(files).toContain(join(REPO, 'services', 'runtime', 'src', 'kit.ts'));
    expect(files.some((f) => f.includes('/node_modules/@kubernetes/client-node/'))).toBe(true);
    expect(files).not.toContain(join(REPO, 'services', 'runtime', 'src', 'index.ts'));
    expect(heavyPackagesIn(files)).toEqual([]);
  });

  it('would see them: the root @lore/runtime loads every adapter driver', () => {
    const { files } = modulesLoadedBy(join(REPO, 'services', 'runtime', 'src', 'index.ts'), FROM_SOURCE, REPO);
    expect(heavyPackagesIn(files)).toEqual(['@electric-sql/pglite', 'ioredis', 'kafkajs', 'pg']);
  });
});
