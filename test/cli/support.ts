/**
 * Running `workspace-api` as a real process: node on the CLI's entry (Node's type stripping runs
 * the TypeScript source as it is; WORKSPACE_API_CLI names another entry, e.g. the bundled
 * dist/cli.js, and WORKSPACE_API_CLI_NODE another node), with a HOME and XDG_CONFIG_HOME of its own and none of the caller's settings.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';

export const CLI_ENTRY = process.env.WORKSPACE_API_CLI ?? fileURLToPath(new URL('../../clients/typescript/src/cli/main.ts', import.meta.url));
/** The node that runs it: this one (Node 24), or WORKSPACE_API_CLI_NODE (e.g. a Node 20 for the bundle). */
const NODE = process.env.WORKSPACE_API_CLI_NODE ?? process.execPath;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A throwaway home: `env` for the CLI (HOME, XDG_CONFIG_HOME, PATH), and where its config lands. */
export interface CliHome {
  dir: string;
  configDir: string;
  env: Record<string, string>;
  remove(): Promise<void>;
}

export async function cliHome(extra: Record<string, string> = {}): Promise<CliHome> {
  const dir = await mkdtemp(join(tmpdir(), 'workspace-api-cli-'));
  const configDir = join(dir, 'config');
  return {
    dir,
    configDir,
    // NODE_COMPILE_CACHE: V8's code cache for the CLI's modules, the suite's (vitest.config.ts) and
    // the service's: a run then takes 0.14 s of CPU instead of 0.28, and the suites run the CLI a few hundred times.
    env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: configDir, ...(process.env.NODE_COMPILE_CACHE && { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }), ...extra },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Runs the CLI with `args`; `input` is written to its stdin (closed either way: no terminal). */
export function runCli(args: string[], env: Record<string, string>, input = ''): Promise<CliResult> {
  return startCli(args, env, input).done;
}

/** A CLI process still running: what it wrote so far, and its result once it exits. */
export interface RunningCli {
  readonly stdout: string;
  readonly stderr: string;
  done: Promise<CliResult>;
  /** Resolves once stderr contains `text` (rejects if the process exits first). */
  stderrContains(text: string): Promise<void>;
  /** Sends SIGINT, as Ctrl-C at a terminal does. */
  interrupt(): void;
}

export function startCli(args: string[], env: Record<string, string>, input = ''): RunningCli {
  const child = spawn(NODE, [CLI_ENTRY, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiting: { text: string; resolve: () => void }[] = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const waiter of waiting.filter((each) => stderr.includes(each.text))) {
      waiting.splice(waiting.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  child.stdin.end(input);
  return {
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    done,
    interrupt() {
      child.kill('SIGINT');
    },
    stderrContains(text) {
      if (stderr.includes(text)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.push({ text, resolve });
        done.then((result) => reject(new Error(`the CLI exited (${result.code}) before writing "${text}" on stderr:\n${result.stderr}`)), reject);
      });
    },
  };
}

/** Every command of the program, as the words that name it (`['documents', 'upload']`), groups included. */
export function commandPaths(command: Command, prefix: string[] = []): string[][] {
  return command.commands.flatMap((sub) => {
    const path = [...prefix, sub.name()];
    return [path, ...commandPaths(sub, path)];
  });
}

/** The error report of a --json run: the one JSON line on stderr. */
export function jsonError(result: CliResult): { code: string; status?: number; message: string; requestId?: string; exitCode: number; data?: unknown } {
  return JSON.parse(result.stderr).error;
}
