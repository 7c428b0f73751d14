import type * as https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubeConnection } from './client';

/**
 * Builds a `KubeConnection` from a kubeconfig the way kubectl finds it: `path` if given, otherwise `KUBECONFIG`,
 * `~/.kube/config` or the in-cluster service account. `@kubernetes/client-node` does the parsing and every auth
 * flavour (tokens, client certificates, exec plugins, rotating projected tokens); requests go through our own
 * client so each call is visible and counted.
 *
 * Only the composition root imports this module: `@kubernetes/client-node` is an ES module, loaded here through
 * Node's require(esm).
 */
export async function connectionFromKubeConfig(path?: string): Promise<{ connection: KubeConnection; namespace?: string }> {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');

  const probe: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(probe);
  const connection: KubeConnection = {
    server: cluster.server,
    ca: probe.ca as string | Buffer | undefined,
    cert: probe.cert as string | Buffer | undefined,
    key: probe.key as string | Buffer | undefined,
    rejectUnauthorized: cluster.skipTLSVerify ? false : true,
    async headers() {
      // Re-applied per request: token files and exec credentials rotate under a long-running process.
      const opts: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === 'string') out[k] = v;
      if (opts.auth) out.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      return out;
    },
  };
  const context = kc.getContextObject(kc.getCurrentContext());
  return { connection, namespace: context?.namespace };
}
