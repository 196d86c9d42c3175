import { describe, expect, it } from 'vitest';
import { SERVICE_NODE_FLAGS, withServiceFlags } from '../../src/process/node-flags.ts';

describe('the V8 flags of the service processes', () => {
  it('adds the young generation cap to what the parent was started with', () => {
    expect(withServiceFlags(['--enable-source-maps'])).toEqual(['--enable-source-maps', ...SERVICE_NODE_FLAGS]);
  });

  it('leaves a cap the operator chose', () => {
    expect(withServiceFlags(['--max-semi-space-size=16'])).toEqual(['--max-semi-space-size=16']);
  });

  it('is what make start runs serve with (the children inherit it)', async () => {
    const { readFile } = await import('node:fs/promises');
    const makefile = await readFile(new URL('../../Makefile', import.meta.url), 'utf8');
    expect(makefile).toContain(`node ${SERVICE_NODE_FLAGS.join(' ')} src/main.ts serve`);
  });
});
