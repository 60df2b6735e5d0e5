import { type TermStyle, painter } from '../render/style.js';
import { inert } from '../render/inert.js';
import type { BenchProgress } from './runner.js';

export interface ProgressView {
  update(progress: BenchProgress): void;
  /**
   * Draws the progress as it stands again, so elapsed time moves while items run: the bar at
   * once before the first item ends, redrawn in place on a terminal; elsewhere a plain line only
   * when 30 seconds have passed since the last one.
   */
  tick(): void;
  /** Ends a live bar's line so what follows starts on a clean one. */
  close(): void;
  /** A line the user should read while the run goes on (a host that left the pool), above the bar. */
  note(message: string): void;
}

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** Time left, from the pace of the items finished in this session (a resume does not count earlier ones). */
export function eta(progress: Pick<BenchProgress, 'done' | 'total' | 'resumedFrom'>, elapsedMs: number): number {
  const here = progress.done - progress.resumedFrom;
  if (here <= 0) return Number.NaN;
  return (elapsedMs / here) * (progress.total - progress.done);
}

/**
 * Progress on stderr: on a terminal a bar redrawn in place; elsewhere (pipes,
 * CI) a plain line every tenth of the way or every 30 seconds, whichever comes first.
 */
export function progressView(stream: NodeJS.WritableStream, style: TermStyle, options: { now?: () => number; total: number; resumedFrom: number }): ProgressView {
  const now = options.now ?? Date.now;
  const started = now();
  const paint = painter(style);
  let lastLineAt = started;
  let lastTenth = Math.floor((options.resumedFrom / Math.max(1, options.total)) * 10);
  let drawn = false;
  const tally = { right: 0, done: 0, answers: 0, unparsed: 0 };
  let warned = false;
  // Loud once most answers cannot be read: the accuracy figures would then measure parsing, not the models.
  const unreadable = (): string => {
    if (tally.answers < 5 || tally.unparsed * 2 <= tally.answers) return '';
    return paint('red', ` · ⚠ ${Math.round((tally.unparsed / tally.answers) * 100)}% of answers unreadable`);
  };

  const line = (p: BenchProgress): string => {
    const elapsed = now() - started;
    const left = eta(p, elapsed);
    const share = p.total === 0 ? 1 : p.done / p.total;
    const running = tally.done === 0 ? '' : ` · debate right ${tally.right}/${tally.done}`;
    const last = p.itemId === '' ? ' · first items running' : ` · last ${p.itemId} [${p.preset}]`;
    return `${p.done}/${p.total} (${Math.round(share * 100)}%) · elapsed ${formatDuration(elapsed)} · ETA ${Number.isNaN(left) ? '?' : formatDuration(left)}${running}${unreadable()}${last}`;
  };
  const markOf = (p: BenchProgress): string => {
    const last = p.correct['debate-synth'] ?? p.correct['debate-vote'];
    return last === undefined ? '' : last ? paint('green', ' ✓') : paint('red', ' ✗');
  };

  // What the last update said; before any, the run as it starts.
  let current: BenchProgress = { done: options.resumedFrom, total: options.total, resumedFrom: options.resumedFrom, itemId: '', preset: '', correct: {}, answers: 0, unparsed: 0 };
  const draw = (p: BenchProgress, mark: string): void => {
    const width = Math.max(10, Math.min(30, style.columns - 90));
    const filled = p.total === 0 ? width : Math.round((p.done / p.total) * width);
    const bar = `${paint('cyan', '█'.repeat(filled))}${paint('dim', '░'.repeat(width - filled))}`;
    // Longer than the terminal, the line would wrap and the next redraw would not erase it.
    const room = style.columns - width - 4;
    const info = inert(line(p));
    const text = info.length > room ? `${info.slice(0, Math.max(0, room - 1))}…` : `${info}${mark}`;
    stream.write(`\r\u001b[2K${bar} ${text}`);
    drawn = true;
  };

  return {
    note(message) {
      if (drawn) stream.write('\n');
      drawn = false;
      stream.write(`bench: warning: ${inert(message)}\n`);
      if (style.live) draw(current, markOf(current));
    },
    tick() {
      if (style.live) {
        draw(current, markOf(current));
        return;
      }
      if (now() - lastLineAt >= 30_000) {
        lastLineAt = now();
        stream.write(`bench: ${inert(line(current))}\n`);
      }
    },
    update(p) {
      current = p;
      const last = p.correct['debate-synth'] ?? p.correct['debate-vote'];
      if (last !== undefined) {
        tally.done += 1;
        if (last) tally.right += 1;
      }
      tally.answers += p.answers ?? 0;
      tally.unparsed += p.unparsed ?? 0;
      if (!warned && unreadable() !== '') {
        warned = true;
        if (drawn) stream.write('\n');
        drawn = false;
        stream.write(
          `${paint('red', `bench: warning: ${tally.unparsed} of ${tally.answers} answers so far could not be read as an answer.`)} They count as wrong, so accuracy here measures parsing more than the models. Check that the models follow the requested JSON (see \`conclave show\` on a debate, or the report's parse failures).\n`,
        );
      }
      if (style.live) {
        draw(p, markOf(p));
        return;
      }
      const tenth = Math.floor((p.done / Math.max(1, p.total)) * 10);
      if (tenth > lastTenth || now() - lastLineAt >= 30_000 || p.done === p.total) {
        lastTenth = tenth;
        lastLineAt = now();
        stream.write(`bench: ${inert(line(p))}${markOf(p)}\n`);
      }
    },
    close() {
      // The finished bar stays on screen.
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}
