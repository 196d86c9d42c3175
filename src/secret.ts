/**
 * The server secret keys the HMACs of signed URLs and cursors. Production sets SECRET (the same
 * on every instance, or links signed by one would fail on another). On one machine without it,
 * a random secret is made once in `<DATA_DIR>/secret` and kept, so links survive restarts.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.ts';

export function resolveSecret(config: Pick<Config, 'secret' | 'dataDir'>): string {
  // loadConfig already refused a production start without SECRET.
  if (config.secret) return config.secret;
  const path = join(config.dataDir, 'secret');
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    mkdirSync(config.dataDir, { recursive: true });
    const made = randomBytes(32).toString('base64url');
    // wx: if another process made it first, this fails and the file is read again.
    try {
      writeFileSync(path, `${made}\n`, { flag: 'wx', mode: 0o600 });
      return made;
    } catch {
      return readFileSync(path, 'utf8').trim();
    }
  }
}
