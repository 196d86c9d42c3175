/**
 * Bundles the split contract (openapi/) into one document per API with Redocly, then stamps
 * info.version with the package version: the service has one version, reported by the document,
 * the health route and the system status alike.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, extname, join } from 'node:path';
import { parse } from 'yaml';

type Json = Record<string, any>;

/**
 * `apis` name entries of openapi/redocly.yaml (`v1`, `auth`); the answer holds a document for each.
 * One run of the Redocly CLI bundles them all: its start (about 0.4 s of CPU) was half of a
 * bundle's cost. The CLI rather than @redocly/openapi-core's `bundle` in this process: the CLI
 * embeds its own openapi-core; the 1.x in node_modules (openapi-typescript's) orders some
 * components differently, so generated/ would change, and a 2.x in this process wrote the same
 * bytes but cost as much as this one run (importing it is most of the CLI's start).
 */
export function bundleContracts(root: string, version: string, apis: string[]): Record<string, Json> {
  // Given several APIs, the CLI writes each into the -o folder, named after the API's root file.
  const config: Json = parse(readFileSync(join(root, 'openapi/redocly.yaml'), 'utf8'));
  const files = apis.map((api) => {
    const source = config.apis?.[api]?.root;
    if (typeof source !== 'string') throw new Error(`openapi/redocly.yaml has no api ${api}`);
    return `${basename(source, extname(source))}.json`;
  });
  if (new Set(files).size !== files.length) throw new Error(`the roots of ${apis.join(', ')} share a file name`);
  const dir = mkdtempSync(join(tmpdir(), 'bundle-'));
  try {
    execFileSync(join(root, 'node_modules/.bin/redocly'), ['bundle', ...apis, '--config', 'openapi/redocly.yaml', '-o', dir, '--ext', 'json'], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return Object.fromEntries(
      apis.map((api, i) => {
        const doc = JSON.parse(readFileSync(join(dir, files[i]!), 'utf8'));
        if (!doc.paths) throw new Error(`bundling ${api} produced no paths`);
        doc.info.version = version;
        return [api, doc];
      }),
    );
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
