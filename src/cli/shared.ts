import { resolve } from 'node:path';
import type { Store } from '../store/store.js';
import type { CliIO } from './io.js';

export const dbOption = {
  type: 'string',
  describe: 'SQLite file of the record (default: $CONCLAVE_DB, else ~/.local/share/conclave/conclave.db)',
} as const;

/**
 * Open the record named by --db, CONCLAVE_DB or the XDG default. Viewing commands
 * pass `readonly`: they never create or change a file.
 */
export async function openDb(db: string | undefined, io: CliIO, options: { readonly?: boolean } = {}): Promise<Store> {
  const { defaultDbPath, openStore } = await import('../store/open.js');
  const path = db ? resolve(io.cwd, db) : defaultDbPath(io.env);
  return openStore(path, { readonly: options.readonly === true });
}
