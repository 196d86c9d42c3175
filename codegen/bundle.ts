/**
 * Bundles the split contract (openapi/) into one document with Redocly, then stamps info.version
 * with the package version: the service has one version, reported by the document, the health
 * route and the system status alike.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `api` names an entry of openapi/redocly.yaml (`v1` or `auth`). */
export function bundleContract(root: string, version: string, api: string): Record<string, any> {
  const dir = mkdtempSync(join(tmpdir(), 'bundle-'));
  try {
    const out = join(dir, 'openapi.json');
    execFileSync(join(root, 'node_modules/.bin/redocly'), ['bundle', api, '--config', 'openapi/redocly.yaml', '-o', out], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const doc = JSON.parse(readFileSync(out, 'utf8'));
    if (!doc.paths) throw new Error(`bundling ${api} produced no paths`);
    doc.info.version = version;
    return doc;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
