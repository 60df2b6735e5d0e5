import { describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { reportedCall } from '../../src/engine/primitives/reported-call.js';
import type { CallRequest, Runner } from '../../src/engine/runner.js';
import type { StructuredOutcome } from '../../src/engine/structured-call.js';

/** A runner whose call ends with a usable reply, held back as the call path holds it, and which keeps what it is handed to write. */
function runnerWithReply(outcome: StructuredOutcome<unknown> | Error) {
  const written: DebateEvent[][] = [];
  const reply = { type: 'call.finished', call: { agentId: 'judge' } } as unknown as DebateEvent;
  const runner = {
    call: async (req: CallRequest<unknown>) => {
      req.held?.push(reply);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    emitTogether: (events: readonly DebateEvent[]) => void written.push([...events]),
  } as unknown as Runner;
  return { runner, written, reply };
}

const judged = { type: 'round.judged', at: 1 } as unknown as DebateEvent;

describe('a call reported with what its outcome gives rise to', () => {
  it('hands the held reply and the events made from it over in one group, after the call', async () => {
    const { runner, written, reply } = runnerWithReply({ status: 'ok', value: 42 } as StructuredOutcome<unknown>);
    const value = await reportedCall(runner, {} as CallRequest<unknown>, (outcome) => ({ value: outcome.status, events: [judged] }));
    expect(value).toBe('ok');
    expect(written).toEqual([[reply, judged]]);
  });

  it('still hands the held reply over when reading the outcome throws, or the call itself does', async () => {
    const failing = runnerWithReply({ status: 'ok', value: 42 } as StructuredOutcome<unknown>);
    await expect(
      reportedCall(failing.runner, {} as CallRequest<unknown>, () => {
        throw new Error('unreadable');
      }),
    ).rejects.toThrow('unreadable');
    expect(failing.written).toEqual([[failing.reply]]);
    const stopped = runnerWithReply(new Error('stopped'));
    await expect(reportedCall(stopped.runner, {} as CallRequest<unknown>, () => ({ value: 0, events: [judged] }))).rejects.toThrow('stopped');
    expect(stopped.written).toEqual([[stopped.reply]]);
  });
});
