import { z } from 'zod';
import { agentsConfigSchema } from '@lore/agents';
import { coreConfigSchema } from '@lore/core';
import { graphConfigSchema } from '@lore/graph';
import { blobStoreEnv, checkBlobStoreEnv } from '@lore/runtime';
import { createNamespace, runId } from '../../operator/test/support/kube';
import { MINIMAL, jsonStream, kubectl, kubectlOk, renderObjects, template, type Rendered } from './support';

jest.setTimeout(180_000);

const BLOB_READERS = ['agents', 'agents-worker', 'core', 'core-worker', 'graph', 'graph-worker'];
const S3 = [
  '--set', 'blobStore.type=s3',
  '--set', 'blobStore.s3.bucket=lore-uploads',
  '--set', 'blobStore.s3.endpoint=http://minio.storage.svc:9000',
  '--set', 'blobStore.s3.region=eu-west-1',
  '--set', 'blobStore.s3.forcePathStyle=true',
  '--set', 'blobStore.s3.prefix=prod/',
  '--set', 'blobStore.s3.existingSecret=lore-s3',
];

type EnvVar = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
const component = (d: any): string => d.metadata.labels['app.kubernetes.io/component'];
const envOf = (d: any): EnvVar[] => d.spec.template.spec.containers[0].env ?? [];
const blobVars = (d: any) => envOf(d).filter((e) => e.name === 'LORE_BLOB_STORE' || e.name.startsWith('LORE_S3_'));

/** The chart's blob store values: the env of the six processes that keep files, and its refusals. */
describe('charts/lore blobStore', () => {
  let ns: string;
  let s3Rendered: Rendered;
  let s3Objects: any[];
  beforeAll(async () => {
    ns = await createNamespace(runId(), { prefix: 'chart-blob' });
    // Rendered once: the env checks read the objects, the dry run sends the same YAML to the API server.
    s3Rendered = await template('lore', ns, ['-f', MINIMAL, ...S3]);
    if (s3Rendered.code !== 0) throw new Error(`helm template failed: ${s3Rendered.stderr}`);
    s3Objects = jsonStream(await kubectlOk(['create', '--dry-run=client', '-o', 'json', '-f', '-'], s3Rendered.yaml));
  });

  it('sets LORE_BLOB_STORE=postgres by default, on exactly the processes that keep files', async () => {
    const deployments = (await renderObjects('lore', ns, ['-f', MINIMAL])).filter((o) => o.kind === 'Deployment');
    const withBlob = deployments.filter((d) => blobVars(d).length > 0).map(component).sort();
    expect(withBlob).toEqual(BLOB_READERS);
    for (const d of deployments.filter((x) => BLOB_READERS.includes(component(x)))) {
      expect({ c: component(d), vars: blobVars(d) }).toEqual({ c: component(d), vars: [{ name: 'LORE_BLOB_STORE', value: 'postgres' }] });
    }
  });

  it('passes the S3 settings, credentials only from the Secret, in names and values every service config accepts', async () => {
    const objects = s3Objects;
    const deployments = objects.filter((o) => o.kind === 'Deployment' && BLOB_READERS.includes(component(o)));
    expect(deployments.map(component).sort()).toEqual(BLOB_READERS);
    const schemas: Record<string, z.ZodObject> = { graph: graphConfigSchema, core: coreConfigSchema, agents: agentsConfigSchema };
    for (const d of deployments) {
      const vars = blobVars(d);
      expect({ c: component(d), vars }).toEqual({
        c: component(d),
        vars: expect.arrayContaining([
          { name: 'LORE_BLOB_STORE', value: 's3' },
          { name: 'LORE_S3_BUCKET', value: 'lore-uploads' },
          { name: 'LORE_S3_ENDPOINT', value: 'http://minio.storage.svc:9000' },
          { name: 'LORE_S3_REGION', value: 'eu-west-1' },
          { name: 'LORE_S3_FORCE_PATH_STYLE', value: 'true' },
          { name: 'LORE_S3_PREFIX', value: 'prod/' },
          { name: 'LORE_S3_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: 'lore-s3', key: 'access-key-id' } } },
          { name: 'LORE_S3_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: 'lore-s3', key: 'secret-access-key' } } },
        ]),
      });
      expect(vars).toHaveLength(8);
      // Every name is one the service's own config reads, and the values parse (the Secret's filled in).
      const schema = schemas[component(d).replace('-worker', '')]!;
      for (const v of vars) expect({ c: component(d), name: v.name, known: v.name in schema.shape }).toEqual({ c: component(d), name: v.name, known: true });
      const env = Object.fromEntries(vars.map((v) => [v.name, v.value ?? `secret-${v.name}`]));
      const parsed = z.object(blobStoreEnv).superRefine(checkBlobStoreEnv).safeParse(env);
      expect(parsed.success).toBe(true);
    }
    // No other process gets the bucket or its credentials.
    for (const d of objects.filter((o) => o.kind === 'Deployment' && !BLOB_READERS.includes(component(o)))) expect({ c: component(d), vars: blobVars(d) }).toEqual({ c: component(d), vars: [] });
  });

  it('leaves the credentials out without existingSecret (the pods use their workload identity)', async () => {
    const objects = await renderObjects('lore', ns, ['-f', MINIMAL, '--set', 'blobStore.type=s3', '--set', 'blobStore.s3.bucket=lore-uploads']);
    const graph = objects.find((o) => o.kind === 'Deployment' && component(o) === 'graph');
    expect(blobVars(graph).map((v) => v.name).sort()).toEqual(['LORE_BLOB_STORE', 'LORE_S3_BUCKET', 'LORE_S3_FORCE_PATH_STYLE', 'LORE_S3_REGION']);
  });

  it('renders S3 settings the API server accepts (server-side dry run)', async () => {
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-n', ns, '-f', '-'], s3Rendered.yaml);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/deployment\.apps\/lore-graph-worker serverside-applied \(server dry run\)/);
  });

  it.each([
    ['s3 without a bucket', ['--set', 'blobStore.type=s3'], /blobStore\/s3\/bucket|blobStore\.s3\.bucket is required/],
    ['an unknown type', ['--set', 'blobStore.type=gcs'], /blobStore\/type/],
    ['an endpoint that is not a URL', ['--set', 'blobStore.type=s3', '--set', 'blobStore.s3.bucket=b-1', '--set', 'blobStore.s3.endpoint=minio:9000'], /blobStore\/s3\/endpoint/],
    ['a prefix without its closing slash', ['--set', 'blobStore.type=s3', '--set', 'blobStore.s3.bucket=b-1', '--set', 'blobStore.s3.prefix=prod'], /blobStore\/s3\/prefix/],
    ['a bucket name S3 refuses', ['--set', 'blobStore.type=s3', '--set', 'blobStore.s3.bucket=Lore_Uploads'], /blobStore\/s3\/bucket/],
  ])('refuses %s at render time', async (_name, args, message) => {
    const r = await template('lore', ns, ['-f', MINIMAL, ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
  });
});
