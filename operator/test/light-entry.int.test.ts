import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { heavyPackagesIn, modulesLoadedBy } from '../src/testing/loaded-modules';

const REPO = join(__dirname, '..', '..');

/** The compiled operator, resolved as the image resolves it (package exports' default condition, dist). */
describe('the compiled operator loads only the light runtime kit', () => {
  it('loads no PGlite, kafkajs, ioredis or pg from operator/dist/main.js', () => {
    const main = join(REPO, 'operator', 'dist', 'main.js');
    expect(existsSync(main)).toBe(true);
    const { files, status } = modulesLoadedBy(main, [], REPO);
    expect(status).not.toBe(0);
    expect(files).toContain(join(REPO, 'services', 'runtime', 'dist', 'kit.js'));
    expect(files).not.toContain(join(REPO, 'services', 'runtime', 'dist', 'index.js'));
    expect(heavyPackagesIn(files)).toEqual([]);
  });
});
