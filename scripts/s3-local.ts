/**
 * A local S3-compatible server for development: the `s3rver` dev dependency on 127.0.0.1:4569,
 * keeping its files in ./.data/s3rver, with the bucket `documents`. Run it in a second terminal
 * and start the service with the environment it prints. s3rver does not check signatures, so it
 * proves the S3 driver's requests, not its security.
 *
 * Usage: npm run s3-local [-- --port 4570 --directory ./.data/s3rver --bucket documents]
 */
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import S3rver from 's3rver';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '4569' },
    host: { type: 'string', default: '127.0.0.1' },
    directory: { type: 'string', default: './.data/s3rver' },
    bucket: { type: 'string', default: 'documents' },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`--port must be an integer from 0 to 65535, got "${values.port}"`);
  process.exit(2);
}
const host = values.host;
const directory = resolve(values.directory);
const bucket = values.bucket;

// s3rver reports a port in use as an unhandled 'error' event, not as a rejection: look first.
const problem = await new Promise<NodeJS.ErrnoException | null>((done) => {
  const probe = createServer();
  probe.once('error', done);
  probe.listen(port, host, () => probe.close(() => done(null)));
});
if (problem) {
  console.error(problem.code === 'EADDRINUSE' ? `${host}:${port} is in use; pick another port with -- --port N` : problem.message);
  process.exit(1);
}

await mkdir(directory, { recursive: true });
const server = new S3rver({ address: host, port, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
const { port: actual } = await server.run();

const endpoint = `http://${host}:${actual}`;
console.log(`s3rver listening on ${endpoint}, files in ${directory}, bucket "${bucket}"; Ctrl-C stops it`);
console.log('start the service with this environment:');
console.log('');
console.log(`STORAGE_DRIVER=s3 S3_BUCKET=${bucket} S3_ENDPOINT=${endpoint} S3_FORCE_PATH_STYLE=true S3_ACCESS_KEY_ID=S3RVER S3_SECRET_ACCESS_KEY=S3RVER make start`);
console.log('');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void server.close().then(() => process.exit(0)));
}
