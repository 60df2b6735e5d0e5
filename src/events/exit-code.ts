import { isConclaveError } from '../errors.js';

/** The exit code the CLI returns for an error (src/cli/report.ts): the error's own, else 70 for a bug. */
export function exitCodeOf(err: unknown): number {
  return isConclaveError(err) ? err.exitCode : 70;
}
