import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openRecordDb } from '../shared.js';
import { jsonText } from '../../render/inert.js';

interface ShowArgs {
  id: string;
  db?: string;
  json?: boolean;
}

export function showCommand(io: CliIO, _exit: ExitCode): CommandModule<object, ShowArgs> {
  return {
    command: 'show <id>',
    describe: 'Print a stored debate: every turn, judge score and the synthesis',
    builder: (y) =>
      y
        .positional('id', { type: 'string', demandOption: true, describe: 'Debate id or a unique prefix of it' })
        .option('db', dbOption)
        .option('json', { type: 'boolean', describe: 'Print the versioned JSON document of the whole debate' }),
    handler: async (args) => {
      const store = await openRecordDb(args.db, io);
      try {
        const debate = store.getDebate(store.resolveId(args.id));
        if (args.json) {
          const { debateDocument } = await import('../../render/document.js');
          io.stdout.write(`${jsonText(debateDocument(debate), 2)}\n`);
        } else {
          const { renderMarkdown } = await import('../../render/markdown.js');
          io.stdout.write(renderMarkdown(debate));
        }
      } finally {
        store.close();
      }
    },
  };
}
