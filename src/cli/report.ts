import { isConclaveError } from '../errors.js';
import { inert } from '../render/inert.js';
import { type CliIO, tellUser } from './io.js';

/** A command line the CLI does not accept: yargs' message, printed with the help hint (exit 2). */
export class UsageError extends Error {
  /** The help that explains the command line, e.g. `conclave run --help`. */
  readonly help: string;
  constructor(message: string, help = 'conclave --help') {
    super(message);
    this.help = help;
  }
}

/** Prints an error as the user should see it and returns the exit code: a message and a hint, a stack trace only with --debug. */
export function report(err: unknown, io: CliIO, debug: boolean): number {
  if (err instanceof UsageError) {
    tellUser(io, `${inert(err.message).split('\n').map((l) => `conclave: ${l}`).join('\n')}\nRun \`${err.help}\` for the ${err.help === 'conclave --help' ? 'commands and ' : ''}options.\n`);
    return 2;
  }
  if (isConclaveError(err)) {
    // Messages can quote a model's reply or a server's error text.
    tellUser(io, `conclave: ${inert(err.message)}\n`);
    if (err.hint) tellUser(io, `  ${inert(err.hint)}\n`);
    if (debug && err.stack) io.stderr.write(`${inert(err.stack)}\n`);
    return err.exitCode;
  }
  // Anything else is a bug in Conclave, not something the user did.
  const e = err as Error;
  io.stderr.write(`conclave: internal error: ${inert(e?.message ?? String(err))}\n`);
  io.stderr.write(debug && e?.stack ? `${inert(e.stack)}\n` : '  Run again with --debug for the stack trace, and report it with that output.\n');
  return 70;
}
