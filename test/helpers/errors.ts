import { CallError } from '../../src/backend/types.js';
import { InputError } from '../../src/errors.js';
import type { SimOptions } from '../../src/sim/index.js';

/** The InputError `fn` throws; fails the test when it throws nothing or something else. */
export function errorOf(fn: () => unknown): InputError {
  try {
    fn();
  } catch (err) {
    if (err instanceof InputError) return err;
    throw err;
  }
  throw new Error('expected an InputError');
}

/** The CallError a model call rejects with; fails the test when it succeeds or fails otherwise. */
export async function callFailure(promise: Promise<unknown>): Promise<CallError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof CallError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

/**
 * A simulator reply per last message, for the gateways' failure tests: `crash` fails mid-reply after a
 * token, `stop` ends the stream without its last chunk, anything else is a 500.
 */
export const FAILING_REPLIES: SimOptions['respond'] = (req) =>
  req.messages.at(-1)?.content === 'crash'
    ? { content: 'one two three', error: 'runner crashed', failAfterTokens: 1 }
    : req.messages.at(-1)?.content === 'stop'
      ? { content: 'again again', silentStop: true }
      : { error: 'model runner has unexpectedly stopped', status: 500 };
