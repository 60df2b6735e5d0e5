import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openRecordDb } from '../shared.js';

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
        try {
          const debate = store.getDebate(id);
          // A viewing command: the transcript and the card both go to standard output, so a pipe or a file keeps them.
          const style = { ...detectStyle(io.stdout, io.env), live: false };
          const render = liveRenderer(io.stdout, style);
          for (const event of storedEvents(debate)) {
            render(event);
            if (args.delay > 0 && event.type !== 'turn.started') await new Promise((r) => setTimeout(r, args.delay));
          }
          render.close();
          io.stdout.write(renderCard(debate, detectStyle(io.stdout, io.env)));
        } catch (err) {
          // A hand-edited row that breaks the transcript or the card is named, as `verify` names it.
          const { editedRecordError } = await import('../../store/edited.js');
          throw editedRecordError(store, id, err) ?? err;
        }
      } finally {
        store.close();
      }
    },
  };
}
