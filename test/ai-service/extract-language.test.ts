// `language` in /v1/extract's answer (issue 24, item 4): the real service detects it; the client
// passes on an ISO 639-3 code and reads anything else, or an answer without it (an older service),
// as `und`, so such a document is indexed as every text was before detection.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAiClient } from '../../src/ai-service/client.ts';
import { serve } from './support.ts';

const GERMAN = 'Die alten Häuser der Altstadt wurden im neunzehnten Jahrhundert von Handwerkern gebaut.';

describe('the language of an extraction', async () => {
  const service = await serve();

  it('is detected by the service and passed on by the client', async () => {
    const client = createAiClient({ url: service.url });
    expect(await client.extract(new TextEncoder().encode(GERMAN), 'text/plain')).toEqual({ text: GERMAN, pages: null, language: 'deu' });
    // HTML is read in an extraction thread: detected there.
    expect(await client.extract(new TextEncoder().encode(`<p>${GERMAN}</p>`), 'text/html')).toMatchObject({ language: 'deu' });
  });

  describe('from a service that answers it oddly or not at all', () => {
    let standIn: Server;
    let url: string;
    beforeAll(async () => {
      // Answers with the `language` the request's body names ('absent': none).
      standIn = createServer((req, res) => {
        let body = '';
        req.on('data', (part) => (body += part));
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ text: 'some text', pages: null, ...(body === 'absent' ? {} : { language: JSON.parse(body) }) }));
        });
      });
      standIn.listen(0, '127.0.0.1');
      await once(standIn, 'listening');
      url = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
    });
    afterAll(() => standIn?.close());

    it.each<{ given: string; want: string }>([
      { given: 'absent', want: 'und' },
      { given: '"fra"', want: 'fra' },
      { given: '"DE"', want: 'und' },
      { given: '"german"', want: 'und' },
      { given: '42', want: 'und' },
      { given: 'null', want: 'und' },
    ])('$given -> $want', async ({ given, want }) => {
      const client = createAiClient({ url });
      expect(await client.extract(new TextEncoder().encode(given), 'text/plain')).toEqual({ text: 'some text', pages: null, language: want });
    });
  });
});
