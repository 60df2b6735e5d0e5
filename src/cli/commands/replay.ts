import type { CommandModule } from 'yargs';
import { type CliIO, type ExitCode, tellUser } from '../io.js';
import { dbOption, openRecordDb } from '../shared.js';
import type { StoredDebate } from '../../store/reader.js';

interface ReplayArgs {
  id: string;
  db?: string;
  delay: number;
}

export function replayCommand(io: CliIO, _exit: ExitCode): CommandModule<object, ReplayArgs> {
  return {
    command: 'replay <id>',
    describe: 'Re-render a stored debate round by round, as it ran (never contacts a model server)',
    builder: (y) =>
      y
        .positional('id', { type: 'string', demandOption: true, describe: 'Debate id or a unique prefix of it' })
        .option('db', dbOption)
        .option('delay', { type: 'number', default: 0, describe: 'Milliseconds to pause between events, to watch it unfold' }),
    handler: async (args) => {
      const store = await openRecordDb(args.db, io);
      try {
        const id = store.resolveId(args.id);
        const { storedEvents } = await import('../../render/replay.js');
        const { liveRenderer } = await import('../../render/live.js');
        const { renderCard } = await import('../../render/card.js');
        const { detectStyle } = await import('../../render/style.js');
        const { renderDebate } = await import('../../store/edited.js');
        // A viewing command: the transcript and the card both go to standard output, so a pipe or a file keeps them.
        const transcript = (out: NodeJS.WriteStream, debate: StoredDebate) => {
          const render = liveRenderer(out, { ...detectStyle(out, io.env), live: false });
          return { events: storedEvents(debate), render, card: () => renderCard(debate, detectStyle(out, io.env)) };
        };
        // Rendered once to nowhere first, so a row the transcript cannot show is set aside before anything is printed.
        const nowhere = { isTTY: io.stdout.isTTY, columns: io.stdout.columns, write: () => true } as unknown as NodeJS.WriteStream;
        const debate = await renderDebate(
          store,
          id,
          (d) => {
            const t = transcript(nowhere, d);
            for (const event of t.events) t.render(event);
            t.render.close();
            t.card();
            return d;
          },
          (line) => tellUser(io, `conclave: ${line}\n`),
        );
        const t = transcript(io.stdout, debate);
        for (const event of t.events) {
          t.render(event);
          if (args.delay > 0 && event.type !== 'turn.started') await new Promise((r) => setTimeout(r, args.delay));
        }
        t.render.close();
        io.stdout.write(t.card());
      } finally {
        store.close();
      }
    },
  };
}
