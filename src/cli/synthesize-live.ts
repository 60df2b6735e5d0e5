import type { DebateEvent, DebateListener } from '../engine/events.js';
import { type EventsWriter, eventsWriter } from '../events/writer.js';
import { liveRenderer } from '../render/live.js';
import { detectStyle } from '../render/style.js';
import { inert } from '../render/inert.js';
import type { CliIO } from './io.js';

/**
 * Who hears a `synthesize` run: on a terminal the live view, where the recommendation streams
 * as it is written; with --events the event writer. Off a terminal, stderr keeps its one line.
 */
export function synthesisListeners(io: CliIO, debateId: string, opts: { events: boolean; quiet: boolean; showThinking: boolean }): {
  listener: DebateListener | null;
  events: EventsWriter | null;
  say(line: string): void;
  close(): void;
} {
  const style = detectStyle(io.stderr, io.env);
  const live = !opts.quiet && style.live ? liveRenderer(io.stderr, style, { showThinking: opts.showThinking }) : null;
  const events = opts.events ? eventsWriter(io.stdout, { debateId }) : null;
  const heard = [live, events].filter((l): l is NonNullable<typeof l> => l !== null);
  const listener =
    heard.length === 0
      ? null
      : Object.assign((e: DebateEvent) => {
          for (const l of heard) l(e);
        }, { progress: heard.some((l) => l.progress !== false) });
  return {
    listener,
    events,
    say: (line) => (live ? live.note(line.replace(/\n$/, '')) : void io.stderr.write(inert(line))),
    close: () => live?.close(),
  };
}
