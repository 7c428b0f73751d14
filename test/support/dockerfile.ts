/** The Dockerfile as data: what a stage does, and the environment its processes run with. */

export interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions of the named stage: continuation lines joined, comment lines inside them dropped. */
export function stageInstructions(dockerfile: string, stage: string): Instruction[] {
  const out: Instruction[] = [];
  let current = '';
  for (const raw of dockerfile.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#')) continue;
    if (line === '' && current === '') continue;
    current += current ? ` ${line.replace(/\\$/, '').trim()}` : line.replace(/\\$/, '').trim();
    if (line.endsWith('\\')) continue;
    const m = /^(\w+)\s+([\s\S]*)$/.exec(current);
    if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]! });
    current = '';
  }
  const from = out.findIndex((i) => i.op === 'FROM' && new RegExp(`\\bAS\\s+${stage}$`, 'i').test(i.args));
  if (from < 0) throw new Error(`no stage ${stage} in the Dockerfile`);
  const end = out.findIndex((i, n) => n > from && i.op === 'FROM');
  return out.slice(from + 1, end < 0 ? undefined : end);
}

/** `KEY=value KEY2="value 2"` of an ENV instruction. */
export function envPairs(args: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of args.matchAll(/(\w+)=("([^"]*)"|\S+)/g)) env[m[1]!] = m[3] ?? m[2]!;
  return env;
}

/**
 * The runtime stage's environment (NODE_OPTIONS among it) for a tree that stands in for the image's `/app`:
 * what every entry point of the image runs with.
 */
export function runtimeStageEnv(dockerfile: string, appDir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const step of stageInstructions(dockerfile, 'runtime')) {
    if (step.op === 'ENV') Object.assign(env, envPairs(step.args));
  }
  for (const [k, v] of Object.entries(env)) env[k] = v.replaceAll('/app/', `${appDir}/`);
  return env;
}
