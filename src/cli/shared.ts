import { resolve } from 'node:path';
import { InputError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { RecordReader } from '../store/reader.js';
import { type CliIO, tellUser } from './io.js';

export const dbOption = {
  type: 'string',
  describe: 'SQLite file of the record (default: $CONCLAVE_DB, else ~/.local/share/conclave/conclave.db)',
} as const;

/**
 * Open the record named by --db, CONCLAVE_DB or the XDG default. Viewing commands
 * pass `readonly`: they never create or change a file.
 */
export async function openDb(db: string | undefined, io: CliIO, options: { readonly?: boolean; signKey?: string } = {}): Promise<Store> {
  const { defaultDbPath, openStore } = await import('../store/open.js');
  const path = db === undefined ? defaultDbPath(io.env) : resolve(io.cwd, nonEmptyDb(db, defaultDbPath(io.env)));
  // The key is read first: a bad key leaves the database untouched.
  const keyFile = options.readonly ? undefined : (options.signKey ?? (io.env.CONCLAVE_SIGNING_KEY || undefined));
  const signer = keyFile === undefined ? null : await loadSigner(resolve(io.cwd, keyFile), io);
  const store = openStore(path, { readonly: options.readonly === true, onUpgrade: (message) => tellUser(io, `${message}\n`) });
  store.signWith(signer);
  return store;
}

/** Opens an existing record for reading only, without loading drizzle: what `show`, `export`, `list`, `verify` and `replay` need. */
export async function openRecordDb(db: string | undefined, io: CliIO): Promise<RecordReader> {
  const { defaultDbPath, openRecord } = await import('../store/open-read.js');
  return openRecord(db === undefined ? defaultDbPath(io.env) : resolve(io.cwd, nonEmptyDb(db, defaultDbPath(io.env))));
}

/**
 * `--db ""` names no file: refused, rather than read as "no --db" (the default record), so a
 * script whose `--db "$DB"` lost its variable does not write into the user's main record.
 * (An empty CONCLAVE_DB is read as unset, as XDG_DATA_HOME is: that is the default's business.)
 */
export function nonEmptyDb(db: string, fallback: string): string {
  if (db !== '') return db;
  throw new InputError('EMPTY_DB', `--db is empty: give a file path, or leave --db out to use ${fallback}.`, {
    hint: 'An unset shell variable (as in --db "$DB") gives an empty path. Nothing was opened or written.',
  });
}

/** `--sign-key`: seals written by this command are signed with that Ed25519 private key (docs/record.md). */
export const signKeyOption = {
  type: 'string',
  describe: 'Sign every seal with this Ed25519 private key (default: $CONCLAVE_SIGNING_KEY; make one with `conclave keys init`)',
} as const;

async function loadSigner(file: string, io: CliIO) {
  const { readTextFile } = await import('../config/read-file.js');
  const { statSync } = await import('node:fs');
  const { signerFromPem } = await import('../store/signing.js');
  const pem = readTextFile(file, {
    what: 'Signing key',
    code: 'SIGNING_KEY',
    maxBytes: 64 * 1024,
    hint: 'Pass the private key written by `conclave keys init` with --sign-key or CONCLAVE_SIGNING_KEY.',
  });
  // Read as a private key first: a public key or another file is refused, with no warning about who may read it.
  const signer = signerFromPem(pem, file);
  try {
    const mode = statSync(file).mode & 0o777;
    // Anyone who can read the private key can sign a forgery that `verify --public-key` accepts.
    if ((mode & 0o077) !== 0) {
      io.stderr.write(
        `Warning: the signing key ${file} can be read by ${(mode & 0o007) !== 0 ? 'every user of this machine' : 'its group'} (mode ${mode.toString(8).padStart(4, '0')}); whoever reads it can sign records as you. Run \`chmod 600 ${file}\`.\n`,
      );
    }
  } catch {
    // It was just read: a file gone since has nothing left to warn about.
  }
  return signer;
}

/** `--attach`, `--token-budget` and `--constraint`, shared by `run` and `demo` (docs/attachments-and-budgets.md). */
export const materialOptions = {
  attach: { type: 'string', describe: 'Attach a UTF-8 text file (1 MiB at most) that every agent reads, whole or as excerpts; repeatable' },
  'token-budget': { type: 'number', describe: 'Prompt plus reply tokens for the whole run: material is cut from 80%, lower-priority agents skipped at 100%' },
  constraint: { type: 'string', describe: 'A constraint stated in every agent prompt, never shortened; repeatable' },
} as const;

export interface MaterialArgs {
  attach?: string | string[];
  'token-budget'?: number;
  constraint?: string | string[];
}

/** The material options as `runFromCli` takes them: repeated flags arrive as a list, a single one as a string. */
export function materialOf(args: MaterialArgs): { attach: string[]; constraint: string[]; 'token-budget'?: number } {
  const listOf = (value: string | string[] | undefined): string[] => (value === undefined ? [] : [value].flat().map(String));
  return { attach: listOf(args.attach), constraint: listOf(args.constraint), ...(args['token-budget'] === undefined ? {} : { 'token-budget': args['token-budget'] }) };
}

/**
 * Checks a bundle's shape against this Conclave's schema (a database in memory) before any
 * database is opened, so a refused bundle leaves nothing behind.
 */
export async function validateBundleShape(bundle: import('../store/bundle.js').Bundle, path: string): Promise<void> {
  const { knownColumns, validateBundle } = await import('../store/bundle.js');
  const { openStore } = await import('../store/open.js');
  const schema = openStore(':memory:');
  try {
    validateBundle(bundle, path, schema.use('read the schema', (_db, sqlite) => knownColumns(sqlite)));
  } finally {
    schema.close();
  }
}
