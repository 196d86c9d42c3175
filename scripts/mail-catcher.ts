/**
 * A development mail catcher: a plain SMTP receiver (the `smtp-server` dev dependency) on
 * 127.0.0.1:2525 that prints every message it gets (envelope from/to, subject, text body) to
 * stdout. No auth, no STARTTLS. Run it in a second terminal, then start the service with
 *
 *   EMAIL_PROVIDER=smtp SMTP_URL=smtp://127.0.0.1:2525 make start
 *
 * (No `?ignoreTLS=true` is needed: this server does not offer STARTTLS, so nodemailer sends in
 * plain text without trying it.) Usage: npm run mail-catcher [-- --port 2526]
 */
import { parseArgs } from 'node:util';
import { SMTPServer } from 'smtp-server';

const { values } = parseArgs({ options: { port: { type: 'string', default: '2525' }, host: { type: 'string', default: '127.0.0.1' } } });
const port = Number(values.port);
const host = values.host!;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`--port must be an integer from 0 to 65535, got "${values.port}"`);
  process.exit(2);
}

let count = 0;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData(stream, session, callback) {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const { from: fromHeader, subject, text } = parseMessage(raw);
      count += 1;
      // The From header as written (with its display name), else the envelope sender; the envelope recipients.
      const from = fromHeader || (session.envelope.mailFrom ? session.envelope.mailFrom.address : '');
      const to = session.envelope.rcptTo.map((r) => r.address).join(', ');
      process.stdout.write([
        `=== message ${count} (${new Date().toISOString()}) ===`,
        `From:    ${from}`,
        `To:      ${to}`,
        `Subject: ${subject}`,
        '',
        text.trimEnd(),
        `=== end of message ${count} ===`,
        '',
        '',
      ].join('\n'));
      callback();
    });
  },
});

server.on('error', (error: NodeJS.ErrnoException) => {
  console.error(error.code === 'EADDRINUSE' ? `${host}:${port} is in use; pick another port with -- --port N` : error);
  process.exit(1);
});

server.listen(port, host, () => {
  const address = server.server.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  console.log(`mail catcher listening on smtp://${host}:${actual} (no auth, no STARTTLS); Ctrl-C stops it`);
  console.log(`start the service with: EMAIL_PROVIDER=smtp SMTP_URL=smtp://${host}:${actual} make start`);
  console.log('');
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => server.close(() => process.exit(0)));
}

// Enough MIME for the single-part text messages nodemailer sends: unfolded headers, encoded
// words in the subject, and the body's quoted-printable or base64 transfer encoding undone.
function parseMessage(raw: string): { from: string; subject: string; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = (split === -1 ? raw : raw.slice(0, split)).replace(/\r\n[ \t]+/g, ' ');
  const body = split === -1 ? '' : raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  let text = body;
  if (encoding === 'quoted-printable') text = decodeQuotedPrintable(body);
  else if (encoding === 'base64') text = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  return { from: decodeEncodedWords(header('From')), subject: decodeEncodedWords(header('Subject')), text: text.replace(/\r\n/g, '\n') };
}

function decodeQuotedPrintable(body: string): string {
  const joined = body.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i += 1) {
    const hex = joined.slice(i + 1, i + 3);
    if (joined[i] === '=' && /^[0-9A-F]{2}$/i.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(joined[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** RFC 2047 encoded words (=?UTF-8?Q?...?= and =?UTF-8?B?...?=), as nodemailer writes non-ASCII subjects. */
function decodeEncodedWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_match, _charset: string, kind: string, data: string) => {
      if (kind.toUpperCase() === 'B') return Buffer.from(data, 'base64').toString('utf8');
      return decodeQuotedPrintable(data.replace(/_/g, ' '));
    });
}
