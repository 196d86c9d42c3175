/**
 * What a person watching sees while the CLI waits: a progress bar of bytes sent (cli-progress)
 * and a spinner with the job's status (ora), both on stderr. Without a person (stdout is not a
 * terminal, or --json) both are silent, so logs and pipes get no control characters.
 */
import cliProgress from 'cli-progress';
import ora from 'ora';
import { bytes } from './format.ts';
import type { Output } from './output.ts';

export interface Progress {
  /** `sent` bytes of the total are out. */
  update(sent: number): void;
  stop(): void;
}

export function uploadProgress(output: Output, label: string, total: number): Progress {
  if (!output.interactive) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} {bar} {percentage}% | {sent} of {size} | {eta_formatted} left`,
      stream: process.stderr,
      // The cursor stays visible: a Ctrl-C during the upload must not leave the terminal without one.
      hideCursor: false,
      clearOnComplete: true,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { sent: bytes(0), size: bytes(total) });
  return {
    update(sent) {
      bar.update(sent, { sent: bytes(sent) });
    },
    stop() {
      bar.stop();
    },
  };
}

export interface Spinner {
  text(text: string): void;
  /** Writes lines (through `write`) above the spinner, which is drawn again below them. */
  above(write: () => void): void;
  stop(): void;
}

export function spinner(output: Output, text: string): Spinner {
  if (!output.interactive) return { text() {}, above: (write) => write(), stop() {} };
  // discardStdin off: ora would put stdin in raw mode, where Ctrl-C is no longer a signal.
  const running = ora({ text, stream: process.stderr, discardStdin: false }).start();
  return {
    text(next) {
      running.text = next;
    },
    above(write) {
      running.clear();
      write();
      running.render();
    },
    stop() {
      running.stop();
    },
  };
}
