/**
 * `make bench` runs only by hand, so a benchmark can stop working unseen: routing-validation.ts
 * did for three days (its hand-made request lacked what the REST route had come to read, so every
 * request answered 500 and `make bench` died there). This runs it with a few requests: it must
 * still route, validate and answer 200. What it measures is not checked here (no timing in tests).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchRoutingValidation } from '../../bench/routing-validation.ts';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase } from '../support/database.ts';

describe('bench/routing-validation.ts', () => {
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.close());

  it('routes, validates and answers 200 on every request', async () => {
    const result = await benchRoutingValidation(db, { batches: 2, perBatch: 20, warmup: 20, validations: 20 });
    for (const figure of Object.values(result)) expect(Number.isFinite(figure)).toBe(true);
  });
});
