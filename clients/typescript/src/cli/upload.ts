/**
 * The PUT of a file's bytes to the presigned address documents.createUpload answered, streamed
 * from disk with node:http(s) rather than fetch: each chunk is counted when the socket has taken
 * it, which is what a progress bar of bytes sent should show, and the length is sent as
 * Content-Length (presigned PUTs refuse chunked bodies).
 */
import { createReadStream } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { text } from 'node:stream/consumers';
import { ApiClientError } from '../index.ts';

export interface UploadTarget {
  url: string;
  headers: Record<string, string>;
}

export async function putFile(target: UploadTarget, path: string, size: number, onSent: (sent: number) => void): Promise<void> {
  const url = new URL(target.url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { 'content-length': String(size), ...target.headers };
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const file = createReadStream(path);
    const request = send(url, { method: 'PUT', headers }, resolve);
    // Either side failing ends both; the first failure is the answer.
    request.on('error', (error) => {
      file.destroy();
      reject(error);
    });
    file.on('error', (error) => {
      request.destroy(error);
      reject(error);
    });
    let sent = 0;
    file.on('data', (chunk: string | Buffer) => {
      const flushed = request.write(chunk, (error) => {
        if (error) return;
        sent += chunk.length;
        onSent(sent);
      });
      if (!flushed) {
        file.pause();
        request.once('drain', () => file.resume());
      }
    });
    file.on('end', () => request.end());
  });
  const body = await text(response);
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return;
  throw uploadError(status, response, body);
}

/** The storage's refusal: the service's error body (local driver) or an S3 XML error. */
function uploadError(status: number, response: IncomingMessage, body: string): ApiClientError {
  const header = (name: string) => {
    const value = response.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const requestId = header('x-request-id') ?? header('x-amz-request-id');
  let code = `HTTP_${status}`;
  let message = `The upload address answered ${status} ${response.statusMessage ?? ''}`.trim();
  let data: unknown;
  try {
    const json = JSON.parse(body) as { code?: unknown; message?: unknown; data?: unknown };
    if (typeof json.code === 'string') code = json.code;
    if (typeof json.message === 'string') message = json.message;
    data = json.data;
  } catch {
    const xml = /<Code>([^<]+)<\/Code>[\s\S]*?<Message>([^<]*)<\/Message>/.exec(body);
    if (xml) {
      code = xml[1]!;
      message = xml[2]!;
    }
  }
  return new ApiClientError({ code, status, message, ...(data === undefined ? {} : { data }), ...(requestId ? { requestId } : {}) });
}
