/** The driver the configuration names: local files under the data directory, or an S3 bucket. */
import type { Config } from '../config.ts';
import { LocalDriver } from './local-driver.ts';
import { S3Driver } from './s3-driver.ts';
import { withStorageSpans } from './storage-spans.ts';

export type AnyStorageDriver = LocalDriver | S3Driver;

/** `driver.name === 'local'` narrows to LocalDriver, the one that needs the /uploads routes. Its operations make spans while tracing is on (storage-spans.ts). */
export function createStorageDriver(config: Pick<Config, 'storage' | 'dataDir' | 'publicUrl'>, secret: string): AnyStorageDriver {
  if (config.storage.driver === 's3') return withStorageSpans(new S3Driver(config.storage));
  return withStorageSpans(new LocalDriver({ dataDir: config.dataDir, publicUrl: config.publicUrl, secret }));
}
