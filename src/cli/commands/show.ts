import type { CommandModule } from 'yargs';
import { type CliIO, type ExitCode, tellUser } from '../io.js';
import { dbOption, openRecordDb } from '../shared.js';
import { jsonText } from '../../render/inert.js';
import type { StoredDebate } from '../../store/reader.js';

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
        const id = store.resolveId(args.id);
        const render = args.json
          ? await import('../../render/document.js').then(({ debateDocument }) => (d: StoredDebate) => `${jsonText(debateDocument(d), 2)}\n`)
          : await import('../../render/markdown.js').then(({ renderMarkdown }) => renderMarkdown);
        const { renderDebate } = await import('../../store/edited.js');
        io.stdout.write(await renderDebate(store, id, render, (line) => tellUser(io, `conclave: ${line}\n`)));
      } finally {
        store.close();
      }
    },
  };
}
