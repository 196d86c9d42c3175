/**
 * The storage being down, as procedures meet it (StorageUnavailableError, driver.ts): 503
 * SERVICE_UNAVAILABLE with a generic message, the driver's detail only in the log, because trying
 * again later can succeed. The deletion protocol built on it is in delete-objects.ts.
 */
import { ApiError } from '../contract/errors.ts';
import type { Logger } from '../logger.ts';
import { StorageUnavailableError } from './driver.ts';

export const STORAGE_UNAVAILABLE = 'The file storage is unavailable, try again later.';

/** For a storage call's `catch` in a procedure: StorageUnavailableError becomes the 503 (logged); anything else goes on. */
export function refuseWhenStorageDown(log: Logger): (error: unknown) => never {
  return (error) => {
    if (!(error instanceof StorageUnavailableError)) throw error;
    log.warn({ detail: error.message }, 'storage unavailable');
    throw new ApiError('SERVICE_UNAVAILABLE', { message: STORAGE_UNAVAILABLE });
  };
}
