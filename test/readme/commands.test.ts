/**
 * Every command the README shows works as written. Each command (test/readme/readme-commands.ts
 * finds them: the ```sh blocks and the inline ones) is either run here or listed below with the
 * reason it is not, so a new command in the README fails this test until it is one or the other.
 *
 * Run here, on a live server (startTestServer, on a free port standing in for 127.0.0.1:3000):
 * - the SDK generation (`npx -y -p typescript@5 -p @hey-api/openapi-ts openapi-ts ...`) in an empty
 *   folder outside the repository with an empty npm cache, as on a fresh machine: once on the
 *   machine's node (PATH without node_modules/.bin) and once on the Node 24 of node_modules/.bin.
 *   It needs the npm registry; without it these two are skipped, saying so;
 * - the RPC health call;
 * - the three walkthroughs on the local storage driver, in order, in one folder: accounts and
 *   organizations (emails go to an SMTP receiver, and the links are taken from them as a reader
 *   copies them from the mail catcher), workspaces and documents, jobs and search (the companion AI
 *   service with the offline model). Each `<PLACEHOLDER>` is filled with the value an earlier
 *   answer gave, as the reader copies it, and each answer is compared with the one the README shows
 *   (its `…` standing for anything);
 * - the command-line walkthrough, with `workspace-api` on the PATH running the CLI's source and a
 *   home of its own for the session signup saves.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { linkIn, startSmtpReceiver, type SmtpReceiver } from '../support/smtp.ts';
import { CLI_ENTRY, cliHome } from '../cli/support.ts';
import { readmeCommands, type ReadmeCommand } from './readme-commands.ts';

const README = new URL('../../README.md', import.meta.url);
const root = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const README_ORIGIN = 'http://127.0.0.1:3000';
const SDK_COMMAND = 'npx -y -p typescript@5 -p @hey-api/openapi-ts openapi-ts -i http://127.0.0.1:3000/api/v1/openapi.json -o ./sdk';

const commands = readmeCommands(README);
const text = await readFile(README, 'utf8');
/** The 1-based line of a heading of the README. */
const headingLine = (heading: string) => text.split('\n').indexOf(heading) + 1;
const walkthroughs = {
  accounts: [headingLine('## Walkthrough: accounts and organizations'), headingLine('## Walkthrough: workspaces and documents')],
  documents: [headingLine('## Walkthrough: workspaces and documents'), headingLine('### The same on the S3 driver')],
  s3: [headingLine('### The same on the S3 driver'), headingLine('## Walkthrough: jobs and search')],
  jobs: [headingLine('## Walkthrough: jobs and search'), headingLine('## Walkthrough: the command-line tool')],
  cli: [headingLine('## Walkthrough: the command-line tool'), headingLine('## Settings')],
} as const;
const inSection = (command: ReadmeCommand, section: keyof typeof walkthroughs) => command.line > walkthroughs[section][0] && command.line < walkthroughs[section][1];

/** What is not run, and why. The first rule that matches a command decides. */
const notRun: [RegExp, string][] = [
  [
    /^(\S+=\S+ )*make start$|^npm run start$|^node src\/main\.ts (serve|<command>)/,
    'starts the service on port 3000 until stopped; the walkthroughs run here against the same app on a free port (test/support/server.ts), and test/process/ starts the real processes',
  ],
  [/^curl -sN /, 'an event stream that stays open until Ctrl-C; test/jobs/stream.test.ts follows the same stream'],
  [/^(make (test|test-pg|ci)|npm test( --.*)?|scripts\/test-pg\.sh( .*)?)$/, 'runs the test suite, which this test is part of'],
  [/^node scripts\/database-tests\.ts$/, 'lists the test files make test-pg runs; test/unit/database-tests.test.ts checks the list'],
  [/^make test-pooler$/, 'runs the multi-instance suites of the test suite again behind PgBouncer (CI runs it, .ci/run)'],
  [/^make test-upgrade$/, 'runs two releases side by side for minutes on a server of its own (CI runs it, .ci/run)'],
  [/^make contract-test( BASE=<url>)?$/, 'runs test/contract/black-box.test.ts, part of the suite (with BASE, against a target you name)'],
  [
    /^(make (install|browser)|npm ci|apt-get install jq|node_modules\/\.bin\/node scripts\/install-model\.ts)$/,
    'installs packages or files on the machine; `make test` runs make install and make browser before the suite',
  ],
  [/^make clean$/, 'deletes the local .data and .tmp folders'],
  [/^node src\/main\.ts (backup|restore) <path>$/, 'backs up or restores the embedded database in ./.data; test/backup/backup-restore.test.ts runs both against real processes'],
  [
    /^make (codegen|codegen-check|lint|lint-migrations|deps|contract-diff|contract-diff-check|contract-release)$/,
    'a development step CI runs itself (make ci, .ci/run); test/unit/, test/lint/migration-lint.test.ts and test/contract/contract-diff.test.ts hold their checks',
  ],
  [/^(npm run|make) format$/, 'rewrites the source files in place (Prettier); make lint checks that they are formatted'],
  [/^(make mock|npm run (mail-catcher|s3-local))$/, 'a development server that runs until Ctrl-C; the suite starts the same programs on free ports (test/support/prism.ts, smtp.ts, s3.ts)'],
  [/^(\S+=\S+ )*make (bench|soak)$/, 'minutes of load; CI runs the 3-minute soak (make ci)'],
  [/^node bench\/start\.ts$/, 'starts `serve` ten times to time it, a benchmark (make bench); test/process/ starts the real processes'],
  [/^make scaffold( .*)?$/, 'writes a new operation into the contract and the code; test/contract/scaffold.test.ts runs it on a throwaway copy'],
  [/^npm run migrate( -- status)?$/, 'changes (or reads) the embedded database in ./.data, which a running `make start` holds; test/db/migrations.test.ts runs the migrations'],
  [/^npm pack$/, "the client package's own test packs and installs it (test/client/package.test.ts)"],
];

interface Rule {
  runs: (command: ReadmeCommand) => boolean;
}
const runHere: Rule[] = [
  { runs: (command) => command.text === SDK_COMMAND },
  { runs: (command) => command.from === 'block' && command.text.startsWith(`curl -s -X POST ${README_ORIGIN}/rpc/system/health `) },
  // The walkthroughs on the local driver: every command of their blocks, but the stream (notRun).
  {
    runs: (command) =>
      command.from === 'block' &&
      !command.text.startsWith('curl -sN') &&
      (inSection(command, 'accounts') || inSection(command, 'documents') || inSection(command, 'jobs')) &&
      !/make start$|^make install$|^npm run /.test(command.text),
  },
  // The command-line walkthrough: `workspace-api` is the CLI's source run by this Node (test/cli/support.ts).
  { runs: (command) => command.from === 'block' && inSection(command, 'cli') },
];
const reason = (command: ReadmeCommand) => notRun.find(([pattern]) => pattern.test(command.text))?.[1];
const runsHere = (command: ReadmeCommand) => runHere.some((rule) => rule.runs(command));

describe('the README commands', () => {
  it('finds the commands of every section', () => {
    expect(commands.filter((command) => command.text === SDK_COMMAND)).toHaveLength(1);
    expect(commands.filter((command) => inSection(command, 'accounts') && command.text.startsWith('curl')).length).toBeGreaterThan(10);
    expect(
      Object.values(walkthroughs)
        .flat()
        .every((line) => line > 0),
    ).toBe(true);
  });

  it.each(commands.map((command) => [`${command.line}: ${command.text.slice(0, 100)}`, command] as const))('%s is run here or has a reason not to be', (_name, command) => {
    const decided = runsHere(command) ? 'run' : reason(command);
    expect(decided, `README line ${command.line}: neither run by test/readme/commands.test.ts nor given a reason not to be:\n${command.text}`).toBeDefined();
  });
});

/** The registry answers: npx can fetch the packages. */
async function registryReachable(): Promise<boolean> {
  try {
    const response = await fetch('https://registry.npmjs.org/typescript/latest', { signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}
const registry = await registryReachable();
if (!registry) console.warn('test/readme/commands.test.ts: the SDK generation is skipped: the npm registry (https://registry.npmjs.org) is unreachable, and npx needs it');

let server: TestServer;
let smtp: SmtpReceiver;
let folder: string;
beforeAll(async () => {
  smtp = await startSmtpReceiver();
  server = await startTestServer({ env: { EMAIL_PROVIDER: 'smtp', SMTP_URL: smtp.url, RATE_LIMIT_PER_MINUTE: '100000' } });
  // Outside the repository: nothing of its node_modules or .npmrc is found from there.
  folder = await mkdtemp(join(tmpdir(), 'readme-commands-'));
}, 90_000);
afterAll(async () => {
  await server?.close();
  await smtp?.stop();
  if (folder) await rm(folder, { recursive: true, force: true });
});

/** Runs a command line in bash, in `cwd`, with the README's address replaced by the live server's. */
async function shell(command: string, options: { cwd: string; env?: NodeJS.ProcessEnv; timeout?: number }) {
  const line = command.replaceAll(README_ORIGIN, server.origin);
  try {
    return await run('bash', ['-c', line], { cwd: options.cwd, env: options.env ?? process.env, timeout: options.timeout ?? 60_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    throw new Error(`\`${line}\` failed (exit ${failed.code}):\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`, { cause: error });
  }
}

describe.skipIf(!registry)('the SDK generation, as a fresh machine runs it', () => {
  const machinePath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((entry) => !entry.endsWith(join('node_modules', '.bin')))
    .join(delimiter);
  const nodes = [
    ["the machine's node (PATH)", machinePath, /^v\d+\./],
    ['Node 24 (node_modules/.bin)', [join(root, 'node_modules', '.bin'), machinePath].join(delimiter), /^v24\./],
  ] as const;
  let cache: string;
  beforeAll(async () => {
    // An empty npm cache: npx downloads TypeScript 5 and the generator as on a machine that never had them.
    cache = await mkdtemp(join(tmpdir(), 'readme-npm-cache-'));
  });
  afterAll(() => rm(cache, { recursive: true, force: true }));

  it.each(nodes)(
    '%s: the README command writes a working SDK',
    async (_name, path, expectedVersion) => {
      const cwd = await mkdtemp(join(folder, 'sdk-'));
      const env = { ...withoutNpmScriptVariables(process.env), PATH: path, npm_config_cache: cache, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
      const { stdout: version } = await run('node', ['--version'], { env });
      expect(version.trim()).toMatch(expectedVersion);
      await shell(SDK_COMMAND, { cwd, env, timeout: 240_000 });
      const files = await readdir(join(cwd, 'sdk'));
      expect(files, `node ${version.trim()}`).toEqual(expect.arrayContaining(['index.ts', 'sdk.gen.ts', 'types.gen.ts']));
      const sdk = await readFile(join(cwd, 'sdk', 'sdk.gen.ts'), 'utf8');
      expect(sdk).toMatch(/export const workspacesList\b/);
      expect(sdk).toMatch(/export const jobsStream\b/);
      // It calls this deployment with no base URL to set: the served document's first server.
      const generatedClient = await readFile(join(cwd, 'sdk', 'client.gen.ts'), 'utf8');
      expect(generatedClient).toContain(`${server.origin}/api/v1`);
    },
    300_000,
  );
});

/** npm run sets npm_* variables (its own config among them) that a fresh shell would not have. */
function withoutNpmScriptVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !/^npm_/i.test(key)));
}

/**
 * The README's answer as a pattern: `…` stands for anything, `<PLACEHOLDER>`s for the values copied
 * so far, and a time (`2026-11-21T09:15:00.000Z`) for any time.
 */
function answerPattern(answer: string, values: Record<string, string>, flags = ''): RegExp {
  const quote = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // An elision takes the spaces around it along (`weekly. … Invoices`: what it stands for may end in a line break).
  const parts = answer.split(/(<[A-Z_]+>| ?… ?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)/);
  const pattern = parts
    .map((part, index) => {
      if (index % 2 === 0) return quote(part);
      if (part.trim() === '…') return '[\\s\\S]*?';
      if (part.startsWith('<')) {
        const name = part.slice(1, -1);
        return name in values ? quote(values[name]!) : '[^"\\s]*';
      }
      return '\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z';
    })
    .join('');
  return new RegExp(`^${pattern}$`, flags);
}

describe('the walkthroughs, command by command', () => {
  const values: Record<string, string> = {};
  /** The values a reader copies from an answer (JSON), by the command that gave it. */
  const harvests: [RegExp, (body: any) => Record<string, string>][] = [
    [/sign-in\/email .*ada@example\.com/, (body) => ({ ADA_TOKEN: body.token })],
    [/sign-up\/email .*grace@example\.com/, (body) => ({ GRACE_TOKEN: body.token })],
    [/organization\/create /, (body) => ({ ORG_ID: body.id })],
    [/organization\/invite-member /, (body) => ({ INVITATION_ID: body.id })],
    [/\/api\/v1\/workspaces -H .*"slug":"research"/, (body) => ({ WORKSPACE_ID: body.id })],
    [/\/api\/v1\/documents -H .*"name":"(hello\.pdf|handbook\.md)"/, (body) => ({ DOCUMENT_ID: body.document.id, UPLOAD_URL: body.upload.url })],
    [/\/download-url /, (body) => ({ DOWNLOAD_URL: body.url })],
    [/limit=2' /, (body): Record<string, string> => (body.nextCursor ? { CURSOR: body.nextCursor } : {})],
    [/\/api\/v1\/jobs -H /, (body) => ({ JOB_ID: body.id })],
  ];
  /** Links the reader copies from the mail catcher. */
  const links: Record<string, string> = { VERIFY_LINK: 'ada@example.com', GRACE_VERIFY_LINK: 'grace@example.com' };

  async function runAndCompare(command: ReadmeCommand, cwd: string, line = command.text, env?: NodeJS.ProcessEnv): Promise<void> {
    for (const [name, address] of Object.entries(links)) {
      if (!line.includes(`<${name}>`) || values[name]) continue;
      values[name] = linkIn(await verificationMail(address)).href;
    }
    const missing = [...line.matchAll(/<([A-Z_]+)>/g)].map((match) => match[1]!).filter((name) => !(name in values));
    if (missing.length > 0) throw new Error(`README line ${command.line}: no value yet for ${missing.join(', ')}`);
    const filled = line.replace(/<([A-Z_]+)>/g, (_whole, name: string) => values[name]!);
    const { stdout } = await shell(filled, { cwd, ...(env ? { env } : {}) });
    const output = stdout.replaceAll('\r\n', '\n').trim();
    const headers = /^-s[iD]|-D -|-si /.test(line.replace(/^curl /, ''));
    const body = headers ? output.split('\n').at(-1)! : output;
    const harvest = harvests.find(([pattern]) => pattern.test(line));
    if (harvest) Object.assign(values, harvest[1](JSON.parse(body)));
    if (command.answer.length === 0) return;
    const shown = (text: string) => text.replaceAll(README_ORIGIN, server.origin);
    if (headers) {
      // Each header line the README shows is in the answer (the `…` lines stand for the others).
      const lines = output.split('\n').map((each) => each.trim());
      for (const expected of command.answer.map(shown).filter((each) => each !== '…' && each !== '' && !each.startsWith('{'))) {
        // Header names in any case (HTTP/1.1 sends them as the server wrote them).
        expect(
          lines.some((each) => answerPattern(expected, values, 'i').test(each)),
          `README line ${command.line}: "${expected}" in\n${output}`,
        ).toBe(true);
      }
      const json = command.answer.find((each) => each.startsWith('{'));
      if (json) expect(body, `README line ${command.line}`).toMatch(answerPattern(shown(json), values));
      return;
    }
    const answer = shown(command.answer.map((each) => each.trim()).join(''));
    expect(output, `README line ${command.line}: the answer the README shows`).toMatch(answerPattern(answer, values));
  }

  /** The verification message to `address` (an invitation may have come first), once it arrived. */
  async function verificationMail(address: string) {
    for (let waited = 0; waited < 10_000; waited += 100) {
      const found = smtp
        .messagesTo(address)
        .filter((message) => /verify/i.test(message.subject))
        .at(-1);
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`no verification email to ${address} in 10 s`);
  }

  let cwd: string;
  beforeAll(async () => {
    cwd = await mkdtemp(join(folder, 'walkthrough-'));
  });

  it('RPC: system.health', async () => {
    const command = commands.find((each) => runHere[1]!.runs(each))!;
    await runAndCompare(command, cwd);
  });

  it('accounts and organizations', async () => {
    const steps = commands.filter((command) => inSection(command, 'accounts') && runsHere(command));
    expect(steps.length).toBeGreaterThan(10);
    for (const command of steps) await runAndCompare(command, cwd);
  }, 120_000);

  it('workspaces and documents (local driver)', async () => {
    const steps = commands.filter((command) => inSection(command, 'documents') && runsHere(command));
    expect(steps.map((command) => command.text)).toEqual(expect.arrayContaining(['wc -c < hello.pdf', 'cmp hello.pdf downloaded.pdf && echo same']));
    for (const command of steps) await runAndCompare(command, cwd);
  }, 120_000);

  it('jobs and search', async () => {
    // Step 1: "Save this as handbook.md", the README's markdown block.
    const handbook = /Save this as `handbook\.md`[\s\S]*?```markdown\n([\s\S]*?)```/.exec(text)![1]!;
    await writeFile(join(cwd, 'handbook.md'), handbook);
    expect(Buffer.byteLength(handbook)).toBe(2067);
    // Step 2: "Upload and complete it as in the walkthrough above", with the changes the README names.
    const asHandbook = (line: string) =>
      line
        .replaceAll('"name":"hello.pdf"', '"name":"handbook.md"')
        .replaceAll('application/pdf', 'text/markdown')
        .replaceAll('"size":584', '"size":2067')
        .replaceAll('content-length: 584', 'content-length: 2067')
        .replaceAll('-T hello.pdf', '-T handbook.md');
    const upload = commands.filter((command) => inSection(command, 'documents'));
    for (const step of [/"name":"hello\.pdf"/, /^curl -si -T hello\.pdf/, /\/complete /]) {
      const command = upload.find((each) => step.test(each.text))!;
      await runAndCompare({ ...command, answer: [] }, cwd, asHandbook(command.text));
    }
    // Steps 4 and 5, waiting for the index job between them as the reader watches the stream.
    const steps = commands.filter((command) => inSection(command, 'jobs') && runsHere(command));
    const [create, ...rest] = steps;
    expect(create!.text).toMatch(/\/api\/v1\/jobs /);
    await runAndCompare(create!, cwd);
    await waitForJob(values.JOB_ID!, values.ADA_TOKEN!);
    for (const command of rest) await runAndCompare(command, cwd);
  }, 180_000);

  it('the command-line tool: signup, orgs create, workspaces create, documents upload --index, search, then a folder uploaded and indexed with workspaces index', async () => {
    await writeFile(join(cwd, 'handbook.md'), /Save this as `handbook\.md`[\s\S]*?```markdown\n([\s\S]*?)```/.exec(text)![1]!);
    // `workspace-api` on the PATH, as the package's bin puts it there; a home of its own for the saved session.
    const home = await cliHome();
    try {
      const bin = join(home.dir, 'bin');
      await mkdir(bin);
      await writeFile(join(bin, 'workspace-api'), `#!/bin/sh\nexec '${process.execPath}' '${CLI_ENTRY}' "$@"\n`, { mode: 0o755 });
      const env = { ...home.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` };
      const steps = commands.filter((command) => inSection(command, 'cli') && runsHere(command));
      expect(
        steps.map((command) =>
          command.text
            .replace(/^printf .*? \| /, '')
            .split(' ')
            .slice(0, 3)
            .join(' '),
        ),
      ).toEqual([
        'workspace-api signup --url',
        'workspace-api orgs create',
        'workspace-api workspaces create',
        'workspace-api documents upload',
        'workspace-api search lab-notes',
        // A folder of notes, uploaded in one command and indexed in one workspace.index job.
        'mkdir -p notes',
        "printf '# Sickle",
        'workspace-api documents upload',
        'workspace-api workspaces index',
        'workspace-api search lab-notes',
      ]);
      for (const command of steps) await runAndCompare(command, cwd, command.text, env);
    } finally {
      await home.remove();
    }
  }, 180_000);

  async function waitForJob(id: string, token: string): Promise<void> {
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const job = (await (await fetch(`${server.origin}/api/v1/jobs/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { status: string; error?: unknown };
      if (job.status === 'succeeded') return;
      if (job.status === 'failed' || job.status === 'canceled') throw new Error(`the index job ${job.status}: ${JSON.stringify(job.error)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error('the index job did not finish in 120 s');
  }
});
