import type { AgentSpec } from '../../config/preset-schema.js';
import { estimateMessagesTokens, fitPeers } from '../../protocol/context.js';
import { type PeerView, critiqueMessages, openingMessages, retryMessages } from '../../protocol/prompts.js';
import { type Critique, critiqueSchemaFor } from '../../protocol/schemas.js';
import { critiqueClashSection } from '../../protocol/tension-prompts.js';
import { type Tension, normalizeClashUpdates, openClashesOf } from '../../protocol/tensions.js';
import type { CallRequest } from '../call/request.js';
import type { TurnRecord } from '../events.js';
import type { RecordedCalls } from '../run-types.js';
import type { Runner } from '../runner.js';
import { settleClashes } from './clashes.js';
import { rereadCall } from './reread.js';
import { critiqueQuality, critiqueTurnFrom, peerText } from './turns.js';

/**
 * A critique round: each agent reads the usable turns of its peers (as given) and updates
 * its position. `peersOf` says whom each agent reads; the calls run together within the slots.
 */
export async function critiqueRound(
  runner: Runner,
  round: number,
  agents: AgentSpec[],
  previous: TurnRecord[],
  peersOf: (agent: AgentSpec) => TurnRecord[],
  upNext: string[],
  recorded?: RecordedCalls,
  briefOf: (agent: AgentSpec) => string | null = () => null,
): Promise<TurnRecord[]> {
  const own = (agent: AgentSpec): TurnRecord | undefined => previous.find((t) => t.agentId === agent.id);
  // Agents whose call of this round finished before an interruption: read again, or asked with the request built here.
  const reused = new Map<string, TurnRecord>();
  const prepared = new Map<string, TurnRecord | CallRequest<Critique>>();
  for (const agent of agents) {
    const call = recorded?.get(agent.id);
    if (!call) continue;
    const req = critiqueRequest(runner, agent, round, own(agent), peersOf(agent), briefOf(agent));
    const outcome = 'schema' in req ? rereadCall(runner, req, call) : null;
    if (outcome) reused.set(agent.id, critiqueTurnFrom(agent, round, outcome));
    else prepared.set(agent.id, req);
  }
  const asked = await runner.scheduler.round(
    agents
      .filter((agent) => !reused.has(agent.id))
      .map((agent) => ({ model: agent.model, run: () => critiqueTurn(runner, agent, round, own(agent), peersOf(agent), prepared.get(agent.id) ?? critiqueRequest(runner, agent, round, own(agent), peersOf(agent), briefOf(agent))) })),
    upNext,
  );
  const turns = agents.map((agent) => reused.get(agent.id) ?? asked.shift()!);
  runner.emitTogether(turns.map((turn) => ({ type: 'turn.finished', turn, at: runner.now() })));
  settleClashes(runner, round, turns);
  return turns;
}

/** One agent's critique of the given peers' turns, with its own last turn; peers' text is fitted to num_ctx. */
export async function critiqueTurn(
  runner: Runner,
  agent: AgentSpec,
  round: number,
  own: TurnRecord | undefined,
  peerTurns: TurnRecord[],
  prepared: TurnRecord | CallRequest<Critique> = critiqueRequest(runner, agent, round, own, peerTurns),
): Promise<TurnRecord> {
  return 'schema' in prepared ? critiqueTurnFrom(agent, round, await runner.call(prepared)) : prepared;
}

/**
 * The call an agent's critique makes, or its failed turn when the prompt cannot fit num_ctx.
 * `brief` is a section of the protocol's own for this agent (an advocate's role), put before the instructions.
 */
export function critiqueRequest(runner: Runner, agent: AgentSpec, round: number, own: TurnRecord | undefined, peerTurns: TurnRecord[], brief: string | null = null): TurnRecord | CallRequest<Critique> {
  const usable = peerTurns.filter((t) => t.agentId !== agent.id && t.status === 'ok' && t.position);
  // Under budget pressure peers' reasoning goes before their positions do.
  const lean = runner.tally.pressure().dropReasoning && usable.some((t) => t.opening);
  const peers: PeerView[] = usable.map((t) => ({ agentId: t.agentId, position: lean ? (t.position ?? '') : peerText(t) }));
  const options = runner.callOptions(agent.model, agent.options, 'critique');
  const ownPosition = own?.status === 'ok' ? own.position : null;
  const budget = runner.agentPromptBudget(agent.model, options);
  // The open clashes this agent is a party to go in first; when they leave no room for the peers, they are left out.
  let clashes: Tension[] = runner.clashes ? openClashesOf(runner.clashes.tensions, agent.id) : [];
  let clashText = critiqueClashSection(agent.id, clashes);
  let fit = fitPeers(estimateMessagesTokens(critiqueMessages(runner.question, agent.persona, round, ownPosition, [], clashText, brief ?? '')), peers, budget);
  if (!fit && clashes.length) {
    runner.warn(`${agent.id}, round ${round}: its open clashes (${clashes.map((t) => t.id).join(', ')}) left out to fit num_ctx ${runner.numCtx[agent.model]}`);
    clashes = [];
    clashText = '';
    fit = fitPeers(estimateMessagesTokens(critiqueMessages(runner.question, agent.persona, round, ownPosition, [], clashText, brief ?? '')), peers, budget);
  }
  if (!fit) {
    const error = `the prompt does not fit num_ctx ${runner.numCtx[agent.model]} for ${agent.model} even with peers' answers shortened`;
    runner.warn(`${agent.id}, round ${round}: ${error}`);
    return { round, agentId: agent.id, model: agent.model, status: 'failed', position: null, confidence: null, opening: null, critique: null, error };
  }
  const truncation = fit.droppedChars > 0 ? `peers' answers shortened by ${fit.droppedChars} characters to fit num_ctx ${runner.numCtx[agent.model]}` : null;
  if (truncation) runner.warn(`${agent.id}, round ${round}: ${truncation}`);
  return {
    stage: 'critique',
    round,
    agentId: agent.id,
    model: agent.model,
    messages: critiqueMessages(runner.question, agent.persona, round, ownPosition, fit.peers, clashText, brief ?? ''),
    options,
    schema: critiqueSchemaFor(
      peers.map((p) => p.agentId),
      runner.preset.agents.filter((a) => a.id !== agent.id).map((a) => a.id),
      clashes.map((t) => t.id),
    ),
    ...(clashes.length > 0 ? { normalize: normalizeClashUpdates } : {}),
    truncation,
    material: { focus: `${agent.persona ?? ''}\n${ownPosition ?? ''}` },
    ...(lean ? { budgetCuts: [`peers' reasoning left out at ${Math.round(runner.tally.pressure().share * 100)}% of the budget`] } : {}),
    quality: critiqueQuality(retryMessages(openingMessages(runner.question, agent.persona)), fit.peers.length),
  };
}
