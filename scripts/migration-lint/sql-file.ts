/**
 * A migration file read by PostgreSQL's own parser (libpg-query: libpg_query, PostgreSQL 18's
 * grammar, which accepts everything the PostgreSQL 15 we deploy on does). A regular expression
 * would be fooled by comments, string literals and dollar quoting; the parser is not.
 */
import { parse, type Node, type RangeVar } from 'libpg-query';

export interface Statement {
  /** The parse tree: one key, the statement's kind (`IndexStmt`, `AlterTableStmt`, ...). */
  node: Node;
  /** 1-based line of its first token, after the comments above it (where markers sit). */
  line: number;
  /** Its first line, trimmed and shortened: what a finding quotes. */
  excerpt: string;
}

export type ParsedSql = { ok: true; statements: Statement[]; lines: string[] } | { ok: false; line: number; message: string; lines: string[] };

export async function parseSql(text: string): Promise<ParsedSql> {
  const lines = text.split('\n');
  let tree;
  try {
    tree = await parse(text);
  } catch (error) {
    const details = (error as { sqlDetails?: { cursorPosition?: number } }).sqlDetails;
    const at = Math.min(Math.max(details?.cursorPosition ?? 0, 0), text.length);
    return { ok: false, line: lineAt(text, at), message: error instanceof Error ? error.message : String(error), lines };
  }
  // The parser counts in bytes of UTF-8 (0015's comments hold a "×"); the text is UTF-16.
  const bytes = Buffer.from(text, 'utf8');
  const statements: Statement[] = [];
  for (const raw of tree.stmts ?? []) {
    if (!raw.stmt) continue;
    // A statement's location is just after the previous semicolon: skip the blank lines and comments.
    const start = skipTrivia(text, bytes.subarray(0, raw.stmt_location ?? 0).toString('utf8').length);
    const line = lineAt(text, start);
    statements.push({ node: raw.stmt, line, excerpt: shorten(lines[line - 1]!.slice(start - lineStart(text, start)).trim()) });
  }
  return { ok: true, statements, lines };
}

/** A table as the checks name it: `relname`, or `schema.relname` outside the default schema. */
export function tableName(relation: RangeVar | undefined): string {
  const name = relation?.relname ?? '';
  return relation?.schemaname && relation.schemaname !== 'public' ? `${relation.schemaname}.${name}` : name;
}

/** The same for a name the parser gives as a list of strings (DROP TABLE's objects). */
export function qualifiedName(parts: Node[] | undefined): string {
  const names = (parts ?? []).map((part) => ('String' in part ? (part.String.sval ?? '') : ''));
  if (names.length === 2 && names[0] === 'public') names.shift();
  return names.join('.');
}

/** The parts of a name the parser gives as a `List` (each of DROP's objects). */
export const listItems = (node: Node): Node[] => ('List' in node ? (node.List.items ?? []) : [node]);

const lineStart = (text: string, index: number): number => text.lastIndexOf('\n', index - 1) + 1;

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** Skips whitespace, `-- ...` comments and (nested) block comments. */
function skipTrivia(text: string, index: number): number {
  let i = index;
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (text.startsWith('--', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (text.startsWith('/*', i)) {
      let depth = 0;
      do {
        if (text.startsWith('/*', i)) [depth, i] = [depth + 1, i + 2];
        else if (text.startsWith('*/', i)) [depth, i] = [depth - 1, i + 2];
        else i++;
      } while (depth > 0 && i < text.length);
    } else {
      return i;
    }
  }
}

function shorten(line: string): string {
  return line.length > 100 ? `${line.slice(0, 97)}...` : line;
}
