import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { IntegrityError, InputError } from '../../errors.js';
import { type CliIO, type ExitCode, tellUser } from '../io.js';
import { dbOption, openRecordDb } from '../shared.js';
import { jsonText } from '../../render/inert.js';
import type { StoredDebate } from '../../store/reader.js';

interface ExportArgs {
  id: string;
  db?: string;
  format: string;
  out?: string;
}

export function exportCommand(io: CliIO, _exit: ExitCode): CommandModule<object, ExportArgs> {
  return {
    command: 'export <id>',
    describe: 'Export a stored debate as Markdown, JSON, or a bundle that `conclave import` reads',
    builder: (y) =>
      y
        .positional('id', { type: 'string', demandOption: true, describe: 'Debate id or a unique prefix of it' })
        .option('db', dbOption)
        .option('format', { alias: 'f', type: 'string', choices: ['md', 'json', 'bundle'], default: 'md', describe: 'Output format' })
        .option('out', { alias: 'o', type: 'string', describe: 'Write to this file instead of stdout' }),
    handler: async (args) => {
      const store = await openRecordDb(args.db, io);
      try {
        const id = store.resolveId(args.id);
        let text: string;
        if (args.format === 'bundle') {
          // The raw row: a bundle carries the rows as they are, whatever a hand edit left in them.
          const debate = store.debateRows(id).debate;
          if (debate.status === 'running') {
            throw new InputError('EXPORT_RUNNING', `Debate \`${id}\` is still running (process ${String(debate.pid)} on ${String(debate.hostname)}): its record is not finished.`, {
              hint: 'Export it once it has ended. If its process died, the next command that writes to this database (run, resume, import) marks it interrupted.',
            });
          }
          const { bundleOf, describeBreak } = await import('../../store/bundle.js');
          const verdict = store.verifyDebate(id);
          if (verdict.state === 'broken') {
            throw new IntegrityError('EXPORT_TAMPERED', `Debate \`${id}\` does not match its hashes (${describeBreak(verdict)}), so it is not exported as a bundle.`, {
              hint: 'Run `conclave verify` for details; restore the record from a backup or an earlier bundle first.',
            });
          }
          text = `${JSON.stringify(bundleOf(store.debateRows(id)))}\n`;
        } else {
          const render = args.format === 'json'
            ? await import('../../render/document.js').then(({ debateDocument }) => (d: StoredDebate) => `${jsonText(debateDocument(d), 2)}\n`)
            : await import('../../render/markdown.js').then(({ renderMarkdown }) => renderMarkdown);
          const { renderDebate } = await import('../../store/edited.js');
          text = await renderDebate(store, id, render, (line) => tellUser(io, `conclave: ${line}\n`));
        }
        if (args.out) {
          const path = resolve(io.cwd, args.out);
          try {
            writeFileSync(path, text);
          } catch (err) {
            throw new InputError('EXPORT_WRITE', `Cannot write ${path}: ${(err as Error).message}`, { hint: 'Choose a writable path for --out.' });
          }
          io.stderr.write(`Wrote ${path}\n`);
        } else {
          io.stdout.write(text);
        }
      } finally {
        store.close();
      }
    },
  };
}
