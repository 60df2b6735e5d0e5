import type { DebateEvent } from '../events.js';
import type { CallRequest, Runner } from '../runner.js';
import type { StructuredOutcome } from '../structured-call.js';

/**
 * One call whose usable reply is reported together with what its outcome gives rise to (the
 * judge's score and stances, the synthesis), so the recorder writes them in one transaction
 * with one checkpoint. Failed tries are still reported the moment they end (call/send.ts); if
 * the call or `then` throws, the held reply is reported before the error goes on.
 */
export async function reportedCall<T, R>(
  runner: Runner,
  req: CallRequest<T>,
  then: (outcome: StructuredOutcome<T>) => { value: R; events: DebateEvent[] },
): Promise<R> {
  const held: DebateEvent[] = [];
  let made: { value: R; events: DebateEvent[] };
  try {
    made = then(await runner.call({ ...req, held }));
  } catch (err) {
    runner.emitTogether(held);
    throw err;
  }
  runner.emitTogether([...held, ...made.events]);
  return made.value;
}
