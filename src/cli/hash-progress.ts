import { formatDuration } from '../bench/progress.js';
import type { HashProgress } from '../embedded/file-hashes.js';
import { inertLine } from '../render/inert.js';
import type { TermStyle } from '../render/style.js';

const gb = (bytes: number): string => `${(bytes / 1e9).toFixed(1)} GB`;

/**
 * The read of a large model file on stderr, which would otherwise look like a stall of seconds: on a terminal
 * one line redrawn in place; elsewhere (pipes, CI, NO_COLOR) a plain line as it starts, one every 30 seconds,
 * and one as it ends.
 */
export function hashProgressWriter(stream: NodeJS.WritableStream, style: TermStyle, now: () => number = Date.now): (p: HashProgress) => void {
  let started = 0;
  let lastAt = 0;
  let lastPercent = -1;
  return (p) => {
    const what = `Checking the sha256 of ${inertLine(p.path)} (${gb(p.size)})`;
    const percent = p.size === 0 ? 100 : Math.floor((p.bytesRead / p.size) * 100);
    if (p.bytesRead === 0 && !p.done) {
      started = lastAt = now();
      lastPercent = -1;
      if (!style.live) stream.write(`${what}: remembered afterwards, so the next run does not read it again…\n`);
    }
    const elapsed = now() - started;
    const rate = elapsed > 0 ? `, ${Math.round(p.bytesRead / 1e6 / (elapsed / 1000))} MB/s` : '';
    if (p.done) {
      const line = `${what}: read in ${formatDuration(elapsed)}${rate}.`;
      stream.write(style.live ? `\r\u001b[2K${line.slice(0, style.columns - 1)}\n` : `${line}\n`);
      return;
    }
    if (style.live) {
      if (percent === lastPercent) return;
      lastPercent = percent;
      stream.write(`\r\u001b[2K${`${what}: ${percent}%${rate}`.slice(0, style.columns - 1)}`);
    } else if (now() - lastAt >= 30_000) {
      lastAt = now();
      stream.write(`${what}: ${percent}%${rate}\n`);
    }
  };
}
