/** The media type of a file to upload, from its extension: the types documents accept (DocumentContentType). */
import { extname } from 'node:path';

const BY_EXTENSION: Readonly<Record<string, string>> = {
  '.txt': 'text/plain',
  '.text': 'text/plain',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.json': 'application/json',
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
};

export function contentTypeOf(path: string): string | undefined {
  return BY_EXTENSION[extname(path).toLowerCase()];
}

export const KNOWN_EXTENSIONS = Object.keys(BY_EXTENSION);
