import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { InputError } from '../../errors.js';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openDb } from '../shared.js';

interface ImportArgs {
  file: string;
  db?: string;
}

export function importCommand(io: CliIO, _exit: ExitCode): CommandModule<object, ImportArgs> {
  return {
    command: 'import <file>',
    describe: 'Verify a debate bundle (from `export --format bundle`) and add it to the database',
    builder: (y) =>
      y.positional('file', { type: 'string', demandOption: true, describe: 'The bundle file' }).option('db', dbOption),
    handler: async (args) => {
      const path = resolve(io.cwd, args.file);
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (err) {
        throw new InputError('IMPORT_READ', `Cannot read ${path}: ${(err as Error).message}`, { hint: 'Check the path of the bundle file.' });
      }
      const { checkBundle, importBundle, parseBundle } = await import('../../store/bundle.js');
      const { inert } = await import('../../render/inert.js');
      const bundle = parseBundle(text, path);
      // Verified before the database is opened, so a damaged bundle leaves nothing behind.
      checkBundle(bundle, path);
      const store = await openDb(args.db, io);
      try {
        const r = importBundle(store, bundle, path);
        const state =
          r.verdict.state === 'sealed'
            ? `sealed, ${r.verdict.calls} calls verified`
            : r.verdict.state === 'unsealed'
              ? `not sealed (${r.verdict.reason}); ${r.verdict.calls} calls verified`
              : `recorded before the hash chain: nothing to verify`;
        // The id comes from the bundle file.
        io.stderr.write(inert(r.inserted ? `Imported ${r.id} into ${store.path}: ${state}.\n` : `${r.id} is already in ${store.path}, identical: nothing to do.\n`));
        io.stdout.write(`${inert(r.id)}\n`);
      } finally {
        store.close();
      }
    },
  };
}
