import { IntegrityError } from '../errors.js';
import { describeBreak } from './chain.js';
import type { RecordReader } from './reader.js';

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
