/**
 * s3rver, an S3-compatible server, on a loopback port with one bucket in a temp directory of its
 * own, and the settings that point the service's S3 driver at it. s3rver does not check
 * signatures: any access key does (toolchain.md).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import type { S3Settings } from '../../src/config.ts';

/** The bucket the S3 tests store in, unless they name another. */
export const BUCKET = 'documents';

export interface RunningS3rver {
  s3: S3rver;
  /** Its data directory (from mkdtemp with the given prefix). */
  dir: string;
  port: number;
}

/** s3rver with `bucket`, in a new temp directory named `${prefix}XXXXXX`. */
export async function startS3rver(prefix: string, bucket = BUCKET): Promise<RunningS3rver> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = await s3.run();
  return { s3, dir, port };
}

/** Stops it and deletes its directory (nothing when it never started). */
export async function stopS3rver(running: RunningS3rver | undefined): Promise<void> {
  await running?.s3.close();
  if (running?.dir) await rm(running.dir, { recursive: true, force: true });
}

/** The S3 driver's settings for `bucket` at `endpoint` (path-style addresses, s3rver's keys). */
export function s3Settings(endpoint: string, bucket = BUCKET): S3Settings {
  return { driver: 's3', bucket, region: 'us-east-1', endpoint, forcePathStyle: true, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
}

/** The same as the service's environment (STORAGE_DRIVER=s3 and the S3_* variables). */
export function s3Env(endpoint: string, bucket = BUCKET): Record<string, string> {
  return {
    STORAGE_DRIVER: 's3',
    S3_BUCKET: bucket,
    S3_ENDPOINT: endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    S3_REGION: 'us-east-1',
  };
}
