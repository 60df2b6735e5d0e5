import type { AgentSpec } from '../../config/preset-schema.js';
import type { CallRequest } from '../call/request.js';
import type { TurnRecord } from '../events.js';
import type { RecordedCalls } from '../run-types.js';
import type { Runner } from '../runner.js';
import type { StructuredOutcome } from '../structured-call.js';
import { rereadCall } from './reread.js';

/** An agent's call for the round, or its failed turn when its prompt could not be built (it does not fit num_ctx). */
export type Prepared<T> = TurnRecord | CallRequest<T>;

/**
 * One round of calls, the way every protocol's round runs: an agent whose call in `recorded` (a
 * resumed round) asked exactly its request is read again, not asked; the others are asked all at
 * once within the slots. The round's turns, in panel order, reach the recorder in one write.
 */
export async function askRound<T>(
  runner: Runner,
  agents: readonly AgentSpec[],
  prepared: ReadonlyMap<string, Prepared<T>>,
  turnOf: (agent: AgentSpec, req: CallRequest<T>, outcome: StructuredOutcome<T>) => TurnRecord,
  upNext: string[],
  recorded?: RecordedCalls,
): Promise<TurnRecord[]> {
  const reused = new Map<string, TurnRecord>();
  for (const agent of agents) {
    const req = prepared.get(agent.id)!;
    if (!('schema' in req)) continue;
    const outcome = rereadCall(runner, req, recorded?.get(agent.id));
    if (outcome) reused.set(agent.id, turnOf(agent, req, outcome));
  }
  const asked = await runner.scheduler.round(
    agents
      .filter((agent) => !reused.has(agent.id))
      .map((agent) => ({
        model: agent.model,
        run: async (): Promise<TurnRecord> => {
          const req = prepared.get(agent.id)!;
          return 'schema' in req ? turnOf(agent, req, await runner.call(req)) : req;
        },
      })),
    upNext,
  );
  const turns = agents.map((agent) => reused.get(agent.id) ?? asked.shift()!);
  runner.emitTogether(turns.map((turn) => ({ type: 'turn.finished', turn, at: runner.now() })));
  return turns;
}
