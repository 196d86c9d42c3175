/**
 * A real SMTP receiver for tests (the `smtp-server` package) on 127.0.0.1 and a free port: the
 * app sends through nodemailer with EMAIL_PROVIDER=smtp and SMTP_URL=receiver.url, and tests read
 * the messages that arrived. No auth, no STARTTLS: plain SMTP on loopback. The development mail
 * catcher (scripts/mail-catcher.ts) is this receiver on a fixed port, printing what it gets.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope sender and recipients (MAIL FROM, RCPT TO). */
  from: string;
  to: string[];
  /** The From header as written, display name included. */
  fromHeader: string;
  subject: string;
  /** The text body, transfer encoding undone, with \n line ends. */
  text: string;
  raw: string;
}

export interface SmtpReceiver {
  /** For SMTP_URL: smtp://127.0.0.1:PORT?ignoreTLS=true */
  url: string;
  /** Every message received so far, oldest first. */
  messages: ReceivedMail[];
  messagesTo(address: string): ReceivedMail[];
  /** The next message to `address` not yet handed out by this function (it may have arrived already). */
  nextMessageTo(address: string, timeoutMs?: number): Promise<ReceivedMail>;
  /**
   * Every message to `address` so far, once there are at least `count` of them; after `timeoutMs`,
   * whatever there is (so a test can assert on the number). Hands out nothing: nextMessageTo is
   * unaffected.
   */
  waitForMessagesTo(address: string, count?: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  stop(): Promise<void>;
}

export interface SmtpReceiverOptions {
  /** Recipients to refuse with 550, to test a failed send. */
  refuse?: (address: string) => boolean;
  /** 0 (the default) lets the OS pick a free port. */
  port?: number;
  host?: string;
  /** Called with every message as it arrives. */
  onMessage?: (mail: ReceivedMail) => void;
}

export async function startSmtpReceiver(options: SmtpReceiverOptions = {}): Promise<SmtpReceiver> {
  const host = options.host ?? '127.0.0.1';
  const messages: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  const handedOut = new Map<string, number>();

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (options.refuse?.(address.address)) {
        callback(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }));
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const mail = { from, to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), ...parseMessage(raw), raw };
        messages.push(mail);
        options.onMessage?.(mail);
        for (const wake of waiters) wake();
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;

  const messagesTo = (address: string) => messages.filter((m) => m.to.includes(address.toLowerCase()));
  /** Resolves with `find()`'s first answer other than undefined, checked now and on every message; `onTimeout` after `timeoutMs`. */
  const waitFor = <T>(find: () => T | undefined, timeoutMs: number, onTimeout: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const done = (settle: () => void) => {
        waiters.delete(wake);
        clearTimeout(timer);
        settle();
      };
      const wake = () => {
        const found = find();
        if (found !== undefined) done(() => resolve(found));
      };
      const timer = setTimeout(
        () =>
          done(() => {
            onTimeout().then(resolve, reject);
          }),
        timeoutMs,
      );
      waiters.add(wake);
      wake();
    });

  return {
    url: `smtp://${host}:${port}?ignoreTLS=true`,
    messages,
    messagesTo,
    nextMessageTo(address, timeoutMs = 5_000) {
      const key = address.toLowerCase();
      return waitFor(
        () => {
          const index = handedOut.get(key) ?? 0;
          const message = messagesTo(key)[index];
          if (message) handedOut.set(key, index + 1);
          return message;
        },
        timeoutMs,
        () => Promise.reject(new Error(`no email to ${address} within ${timeoutMs} ms`)),
      );
    },
    waitForMessagesTo(address, count = 1, timeoutMs = 5_000) {
      return waitFor(
        () => {
          const found = messagesTo(address);
          return found.length >= count ? found : undefined;
        },
        timeoutMs,
        async () => messagesTo(address),
      );
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The first http(s) address in a message's text. */
export function linkIn(mail: Pick<ReceivedMail, 'text'>): URL {
  const match = /https?:\/\/\S+/.exec(mail.text);
  if (!match) throw new Error(`no link in the message:\n${mail.text}`);
  return new URL(match[0]);
}

// Enough MIME for the single-part text messages nodemailer sends: unfolded headers, encoded
// words in the subject, and the body's quoted-printable or base64 transfer encoding undone.
function parseMessage(raw: string): { fromHeader: string; subject: string; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  let text = body;
  if (encoding === 'quoted-printable') {
    text = decodeQuotedPrintable(body);
  } else if (encoding === 'base64') {
    text = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  }
  return { fromHeader: decodeEncodedWords(header('From')), subject: decodeEncodedWords(header('Subject')), text: text.replace(/\r\n/g, '\n') };
}

function decodeQuotedPrintable(body: string): string {
  const joined = body.replace(/=\r?\n/g, ''); // soft line breaks
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
  return value.replace(/=\?([^?]+)\?([QB])\?([^?]*)\?=\s*/gi, (_, _charset: string, kind: string, data: string) =>
    kind.toUpperCase() === 'B'
      ? Buffer.from(data, 'base64').toString('utf8')
      : Buffer.from(
          data.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
          'latin1',
        ).toString('utf8'),
  );
}
