import { ConclaveError, IntegrityError } from '../errors.js';
import { describeBreak } from './chain.js';
import type { RecordReader, StoredDebate } from './reader.js';

/**
 * What a reader (`show`, `export`, `replay`, the viewer) says when it could not read or render a
 * debate: if the debate does not verify, the failure came from a hand-edited row (invalid JSON, a
 * shape no Conclave wrote), and the user is told which row changed, as `verify` names it (exit 6),
 * rather than meeting an internal error or a hint to check the disk. Null when the record verifies,
 * or cannot be read at all: the original error stands.
 */
export function editedRecordError(reader: RecordReader, id: string, err: unknown): IntegrityError | null {
  let verdict;
  try {
    verdict = reader.verifyDebate(id);
  } catch {
    return null;
  }
  if (verdict.state !== 'broken') return null;
  return new IntegrityError(
    'RECORD_EDITED',
    `Debate \`${id}\` cannot be read: it does not match its hashes (${describeBreak(verdict)}), and what was changed is not a record Conclave wrote.`,
    { hint: `Run \`conclave verify ${id}\` for details; restore the record from a backup, or import an earlier bundle of it into another database.`, cause: err },
  );
}

/**
 * Renders a debate for a reader. A failure on an edited record is named as `verify` names it (exit
 * 6); on a record that verifies, the values Conclave would not have written (a record edited and
 * sealed again) are set aside, each named on `warn`, and the rest is rendered (src/store/row-check.ts).
 */
export async function renderDebate<T>(reader: RecordReader, id: string, render: (d: StoredDebate) => T, warn: (line: string) => void): Promise<T> {
  try {
    return render(reader.getDebate(id));
  } catch (err) {
    const edited = editedRecordError(reader, id, err);
    if (edited) throw edited;
    if (!readerFailure(err)) throw err;
    const { describeProblem, renderChecked } = await import('./row-check.js');
    const { value, problems } = renderChecked(reader, id, render, err);
    for (const p of problems) warn(describeProblem(id, p));
    return value;
  }
}

/** A failure that a row's value can cause: not a missing debate, a lock or the disk (SQLite's own, which name themselves). */
export function readerFailure(err: unknown): boolean {
  return !(err instanceof ConclaveError) || err.code === 'STORE_FAILED';
}
