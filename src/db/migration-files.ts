// Reads the migration files shipped in sql/: NNNN_name.sql, applied in number order.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface MigrationFile {
  /** The 4-digit number, e.g. "0001"; the key in schema_migrations. */
  version: string;
  /** The part after the number, e.g. "extensions". */
  name: string;
  /** e.g. "0001_extensions.sql" */
  fileName: string;
  /** sha256 (hex) of the file's bytes: any edit, even whitespace, changes it. */
  checksum: string;
  contents: string;
}

const migrationFileName = /^(\d{4})_([A-Za-z0-9_-]+)\.sql$/;

export async function readMigrationFiles(dir: string | URL): Promise<MigrationFile[]> {
  const dirPath = typeof dir === 'string' ? dir : fileURLToPath(dir);
  const names: { fileName: string; match: RegExpExecArray }[] = [];
  for (const fileName of (await readdir(dirPath)).sort()) {
    if (!fileName.endsWith('.sql')) continue; // READMEs and the like
    const match = migrationFileName.exec(fileName);
    if (!match) {
      // A misnamed file would otherwise be skipped silently and never applied.
      throw new Error(`Migration file ${fileName} in ${dirPath} is not named NNNN_name.sql (4-digit number, then letters, digits, _ or -)`);
    }
    names.push({ fileName, match });
  }
  // Read together, not one after the other: every start of `serve` reads them all before its
  // first request (bench/start.ts).
  const files = await Promise.all(
    names.map(async ({ fileName, match }): Promise<MigrationFile> => {
      const bytes = await readFile(join(dirPath, fileName));
      return { version: match[1]!, name: match[2]!, fileName, checksum: createHash('sha256').update(bytes).digest('hex'), contents: bytes.toString('utf8') };
    }),
  );
  for (let i = 1; i < files.length; i++) {
    if (files[i]!.version === files[i - 1]!.version) {
      throw new Error(`Migration files ${files[i - 1]!.fileName} and ${files[i]!.fileName} share the number ${files[i]!.version}; renumber one`);
    }
  }
  return files;
}
