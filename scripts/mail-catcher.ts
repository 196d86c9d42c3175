/**
 * A development mail catcher: the test suite's SMTP receiver (test/support/smtp.ts, on the
 * `smtp-server` dev dependency) on 127.0.0.1:2525, printing every message it gets (From, To,
 * Subject, text body) to stdout. No auth, no STARTTLS. Run it in a second terminal, then start
 * the service with
 *
 *   EMAIL_PROVIDER=smtp SMTP_URL=smtp://127.0.0.1:2525 make start
 *
 * (No `?ignoreTLS=true` is needed: this server does not offer STARTTLS, so nodemailer sends in
 * plain text without trying it.) Usage: npm run mail-catcher [-- --port 2526]
 */
import { parseArgs } from 'node:util';
import { startSmtpReceiver } from '../test/support/smtp.ts';

const { values } = parseArgs({ options: { port: { type: 'string', default: '2525' }, host: { type: 'string', default: '127.0.0.1' } } });
const port = Number(values.port);
const host = values.host;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`--port must be an integer from 0 to 65535, got "${values.port}"`);
  process.exit(2);
}

let count = 0;
const receiver = await startSmtpReceiver({
  port,
  host,
  onMessage(mail) {
    count += 1;
    process.stdout.write(
      [
        `=== message ${count} (${new Date().toISOString()}) ===`,
        `From:    ${mail.fromHeader || mail.from}`,
        `To:      ${mail.to.join(', ')}`,
        `Subject: ${mail.subject}`,
        '',
        mail.text.trimEnd(),
        `=== end of message ${count} ===`,
        '',
        '',
      ].join('\n'),
    );
  },
}).catch((error: NodeJS.ErrnoException) => {
  console.error(error.code === 'EADDRINUSE' ? `${host}:${port} is in use; pick another port with -- --port N` : error);
  process.exit(1);
});

const actual = new URL(receiver.url).port;
console.log(`mail catcher listening on smtp://${host}:${actual} (no auth, no STARTTLS); Ctrl-C stops it`);
console.log(`start the service with: EMAIL_PROVIDER=smtp SMTP_URL=smtp://${host}:${actual} make start`);
console.log('');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void receiver.stop().then(() => process.exit(0)));
}
