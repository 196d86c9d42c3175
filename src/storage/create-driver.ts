/** The driver the configuration names: local files under the data directory, or an S3 bucket. */
import type { Config } from '../config.ts';
import { LocalDriver } from './local-driver.ts';
import type { S3Driver } from './s3-driver.ts';
import { withStorageSpans } from './storage-spans.ts';

export type AnyStorageDriver = LocalDriver | S3Driver;

/**
 * `driver.name === 'local'` narrows to LocalDriver, the one that needs the /uploads routes. Its
 * operations make spans while tracing is on (storage-spans.ts). The S3 driver's module, with the
 * AWS SDK (about 80 ms of CPU to load), is loaded only when it is the one configured: on local
 * files a start does without it (bench/start.ts).
 */
export async function createStorageDriver(config: Pick<Config, 'storage' | 'dataDir' | 'publicUrl'>, secret: string): Promise<AnyStorageDriver> {
  if (config.storage.driver === 's3') {
    const { S3Driver } = await import('./s3-driver.ts');
    return withStorageSpans(new S3Driver(config.storage));
  }
  return withStorageSpans(new LocalDriver({ dataDir: config.dataDir, publicUrl: config.publicUrl, secret }));
}
