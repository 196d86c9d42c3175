/**
 * The stored sign-in: `<config dir>/workspace-api/credentials.json`, where the config dir is
 * $XDG_CONFIG_HOME or ~/.config. The token is a bearer credential, so the folder is 0700 and the
 * file 0600, written to a fresh file and renamed into place: a reader never sees half a file, and
 * a file that once had looser permissions is replaced rather than rewritten.
 */
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CliError, ExitCode } from './exit-codes.ts';

export interface Credentials {
  /** The service's origin the token belongs to; the token is sent nowhere else. */
  url: string;
  token: string;
  user: { id: string; email: string; name: string };
  /** The organization chosen with `orgs use`, used when neither --org nor WORKSPACE_API_ORG names one. */
  organization?: { id: string; slug: string };
  savedAt: string;
}

/** `$XDG_CONFIG_HOME/workspace-api`; a relative XDG_CONFIG_HOME is ignored, as the XDG spec says. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'workspace-api');
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'credentials.json');
}

/** The stored credentials, or null when there are none. A file that is not ours is an error, not "signed out". */
export async function readCredentials(env: NodeJS.ProcessEnv = process.env): Promise<Credentials | null> {
  const path = credentialsPath(env);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw fileError(`Cannot read ${path}`, error);
  }
  try {
    const value = JSON.parse(text) as Partial<Credentials>;
    if (typeof value.url === 'string' && typeof value.token === 'string' && value.user && typeof value.user.email === 'string') return value as Credentials;
  } catch {
    // Reported below like any other unreadable content.
  }
  throw new CliError(ExitCode.localFile, 'CREDENTIALS_UNREADABLE', `${path} is not a credentials file of workspace-api; delete it or run \`workspace-api login\`.`);
}

export async function writeCredentials(credentials: Credentials, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = configDir(env);
  const path = credentialsPath(env);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // mkdir leaves an existing folder as it was; ours holds a secret, so it is closed to others.
    await chmod(dir, 0o700);
    const temporary = join(dir, `.credentials-${randomBytes(6).toString('hex')}.json`);
    await writeFile(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    try {
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  } catch (error) {
    throw fileError(`Cannot write ${path}`, error);
  }
  return path;
}

/** Deletes the stored credentials; answers whether there were any. */
export async function deleteCredentials(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const path = credentialsPath(env);
  try {
    await rm(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw fileError(`Cannot delete ${path}`, error);
  }
}

function fileError(what: string, error: unknown): CliError {
  return new CliError(ExitCode.localFile, 'LOCAL_FILE', `${what}: ${(error as Error).message}`);
}
