/**
 * Bundles the split contract (openapi/) into one document with Redocly, then stamps info.version
 * with the package version: the service has one version, reported by the document, the health
 * route and the system status alike.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Json = Record<string, any>;

/** `api` names an entry of openapi/redocly.yaml (`v1` or `auth`). */
export function bundleContract(root: string, version: string, api: string): Json {
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

/**
 * The document to publish: the bundle without its `x-internal: true` component schemas. Those
 * describe answers of the HTTP layer that belong to no operation (MethodNotAllowedError: a path of
 * the contract called with a method it does not declare), so no operation can refer to them;
 * codegen still compiles their validators from the whole bundle. Throws if anything left in the
 * published document refers to one of them.
 */
export function publishedDocument(doc: Json): Json {
  const schemas: Json = { ...doc.components?.schemas };
  const internal = Object.keys(schemas).filter((name) => schemas[name]?.['x-internal'] === true);
  if (internal.length === 0) return doc;
  for (const name of internal) delete schemas[name];
  const published = { ...doc, components: { ...doc.components, schemas } };
  const text = JSON.stringify(published);
  for (const name of internal) {
    if (text.includes(`"#/components/schemas/${name}"`)) throw new Error(`${name} is x-internal, but the published document refers to it`);
  }
  return published;
}
