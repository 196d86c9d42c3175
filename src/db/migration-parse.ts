// The parse of one migration file, in a process of its own (migration-steps.ts): reads the SQL on
// stdin and writes libpg-query's parse tree as JSON on stdout, or the parser's message on stderr
// with exit code 1. Run with --liftoff-only: V8 otherwise optimizes the parser's 1.8 MB of
// WebAssembly once it is warm, which took the process's memory to about 630 MB for 2 s (measured
// on the sql/ folder), a spike no API or worker should take at its start.
import { text } from 'node:stream/consumers';
import { parse } from 'libpg-query';

try {
  process.stdout.write(JSON.stringify(await parse(await text(process.stdin))));
} catch (error) {
  process.stderr.write(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
}
