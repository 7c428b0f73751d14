import { join } from 'node:path';
import { REPO_ROOT, helm, kubectl, kubectlOk } from '../../operator/test/support/kube';

export const CHART = join(REPO_ROOT, 'charts', 'lore');
export const MINIMAL = join(CHART, 'ci', 'minimal-values.yaml');
export const FULL = join(CHART, 'ci', 'full-values.yaml');

export interface Rendered {
  code: number;
  yaml: string;
  stderr: string;
}

/** `helm template` of the chart; never throws (failures are what some tests look for). */
export async function template(release: string, namespace: string, args: string[] = []): Promise<Rendered> {
  const r = await helm(['template', release, CHART, '--namespace', namespace, ...args]);
  return { code: r.code, yaml: r.stdout, stderr: r.stderr };
}

/** Renders and converts to objects through kubectl (the chart suite needs no YAML library of its own). */
export async function renderObjects(release: string, namespace: string, args: string[] = []): Promise<any[]> {
  const r = await template(release, namespace, args);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return jsonStream(await kubectlOk(['create', '--dry-run=client', '-o', 'json', '-f', '-'], r.yaml));
}

/** kubectl prints one JSON document per object, back to back: split them (strings may contain braces). */
export function jsonStream(text: string): any[] {
  const out: any[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (ch === '}') {
      depth--;
      if (depth === 0) out.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return out.flatMap((o) => (o.kind === 'List' ? o.items : [o]));
}

/** Parses YAML files (CRDs) the same way: through kubectl, offline. */
export async function yamlToObject(path: string): Promise<any> {
  return jsonStream(await kubectlOk(['create', '--dry-run=client', '-o', 'json', '-f', path]))[0];
}

export { helm, kubectl, kubectlOk };
