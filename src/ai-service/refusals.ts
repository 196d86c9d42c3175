/**
 * Every way `/v1/extract` refuses a document, worded for the document's owner: the API stores the
 * message as the job's error (client.ts passes 413, 415 and 422 messages on). One place, so the
 * wording stays consistent and docs/ai-service.md "Limits" can be checked against it.
 */
import { HttpError } from './http-exchange.ts';

/** A 422: the document is the problem, retrying will not help. */
export function unreadable(message: string, cause?: unknown): HttpError {
  return new HttpError(422, message, { cause });
}

export const refusals = {
  inflated: (what: string, limit: number) => unreadable(`The ${what} inflates to more than ${mebibytes(limit)}; at most ${mebibytes(limit)} can be read.`),
  denselyCompressed: (what: string, part: string, ratio: number, maxRatio: number) =>
    unreadable(`The ${what}'s part ${part} inflates to ${count(Math.floor(ratio))} times its stored size; at most ${maxRatio} times can be read.`),
  parts: (what: string, parts: number, limit: number) => unreadable(`The ${what} has ${count(parts)} parts; at most ${count(limit)} can be read.`),
  zip64: (what: string) => unreadable(`The ${what} is a ZIP64 archive, which cannot be read.`),
  pdfStreamDictionary: () => unreadable('The PDF has a stream whose dictionary cannot be read.'),
  pdfFilter: (why: string) => unreadable(`The PDF has a stream whose filters cannot be checked: ${why}.`),
  pdfDamagedStream: (filter: string, cause?: unknown) => unreadable(`The PDF has a ${filter} stream that is damaged before its end, which cannot be checked.`, cause),
  pdfEncrypted: () => unreadable('The PDF is encrypted, which cannot be checked: encrypted PDFs are refused, even those that open without a password.'),
  pdfFormCycle: () => unreadable('The PDF has forms that draw one another in a cycle, which cannot be checked.'),
  pdfUncheckable: (why: string) => unreadable(`The PDF cannot be checked: ${why}.`),
  pdfImageCoded: (codec: string) => unreadable(`The PDF has page content or a font coded with the image filter ${codec}, which cannot be read.`),
  pages: (pages: number, limit: number) => unreadable(`The PDF has ${count(pages)} pages; at most ${count(limit)} can be read.`),
  depth: (limit: number) => unreadable(`The HTML document nests elements more than ${count(limit)} deep; at most ${count(limit)} levels can be read.`),
  characters: (limit: number) => unreadable(`The document's text has more than ${count(limit)} characters; at most ${count(limit)} can be stored.`),
  pixels: (width: number, height: number, limit: number) => unreadable(`The image is ${count(width)} × ${count(height)} pixels (${megapixels(width * height)}); at most ${megapixels(limit)} can be read.`),
  time: (what: string, ms: number, cause?: unknown) => unreadable(`Reading the ${what} took longer than ${seconds(ms)}.`, cause),
  memory: (megabytes: number, cause?: unknown) => unreadable(`Reading the document needed more than ${megabytes} MiB of memory; at most ${megabytes} MiB can be used.`, cause),
};

/** 2000000 → "2 000 000": the space groups digits in English and French alike (SI brochure, 5.4.4). */
export function count(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

function mebibytes(bytes: number): string {
  return `${count(Number((bytes / 1024 ** 2).toFixed(1)))} MiB`;
}

function megapixels(pixels: number): string {
  const value = Number((pixels / 1_000_000).toFixed(3));
  const [whole = '', fraction] = String(value).split('.');
  return `${count(Number(whole))}${fraction ? `.${fraction}` : ''} ${value === 1 ? 'megapixel' : 'megapixels'}`;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(1))} s`;
}
