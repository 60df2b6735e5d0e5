import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openDb, validateBundleShape } from '../shared.js';
import { plural } from '../../plural.js';

interface ImportArgs {
  file: string;
  db?: string;
  'public-key'?: string;
}

export function importCommand(io: CliIO, _exit: ExitCode): CommandModule<object, ImportArgs> {
  return {
    command: 'import <file>',
    describe: 'Verify a debate bundle (from `export --format bundle`) and add it to the database',
    builder: (y) =>
      y
        .positional('file', { type: 'string', demandOption: true, describe: 'The bundle file' })
        .option('public-key', { type: 'string', describe: 'Import only a bundle whose seal is signed with the private key of this Ed25519 public key' })
        .option('db', dbOption),
    handler: async (args) => {
      const path = resolve(io.cwd, args.file);
      const { FILE_LIMITS, readTextFile } = await import('../../config/read-file.js');
      const text = readTextFile(path, {
        what: 'Bundle',
        code: 'BUNDLE',
        maxBytes: FILE_LIMITS.bundle,
        hint: 'Check the path of the bundle file (written by `conclave export ID --format bundle`).',
        tooLargeHint: 'A bundle holds one debate; a file this large is not one.',
      });
      const { checkBundle, importBundle, parseBundle } = await import('../../store/bundle.js');
      const { inert } = await import('../../render/inert.js');
      const { defaultDbPath } = await import('../../store/open.js');
      const { publicKeyFromPem } = await import('../../store/signing.js');
      const keyFile = args['public-key'] === undefined ? null : resolve(io.cwd, args['public-key']);
      const publicKey =
        keyFile === null
          ? null
          : publicKeyFromPem(readTextFile(keyFile, { what: 'Public key', code: 'PUBLIC_KEY', maxBytes: 64 * 1024, hint: 'Pass the `conclave-seal.pub` file written by `conclave keys init`.' }), keyFile);
      const bundle = parseBundle(text, path);
      // Checked whole before the database is opened, so a refused bundle leaves nothing behind:
      // its shape against this Conclave's schema, then its hashes.
      await validateBundleShape(bundle, path);
      checkBundle(bundle, path, publicKey);
      const target = args.db ? resolve(io.cwd, args.db) : resolve(defaultDbPath(io.env));
      const created = !existsSync(target);
      const store = await openDb(args.db, io);
      let ok = false;
      try {
        const r = importBundle(store, bundle, path, { publicKey });
        const signed = publicKey ? ', signed by the given key' : typeof bundle.debate.seal_signature === 'string' ? ', signed (pass --public-key to prove by whom)' : '';
        const state =
          r.verdict.state === 'sealed'
            ? `sealed, ${plural(r.verdict.calls, 'call')} verified${signed}`
            : `not sealed (${r.verdict.reason}); ${plural(r.verdict.calls, 'call')} verified${signed}`;
        // The id comes from the bundle file.
        io.stderr.write(inert(r.inserted ? `Imported ${r.id} into ${store.path}: ${state}.\n` : `${r.id} is already in ${store.path}, identical: nothing to do.\n`));
        io.stdout.write(`${inert(r.id)}\n`);
        ok = true;
      } finally {
        store.close();
        // A database created for an import that was then refused is removed again.
        if (!ok && created) for (const f of [target, `${target}-wal`, `${target}-shm`]) rmSync(f, { force: true });
      }
    },
  };
}
