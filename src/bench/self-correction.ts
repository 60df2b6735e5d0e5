import type { Preset } from '../config/preset-schema.js';
import type { ChatMessage } from '../engine/events.js';
import { clip } from '../protocol/clip.js';
import { withArticle } from '../plural.js';
import type { StoredCall, StoredDebate } from '../store/store.js';
import type { AnswerOutcome } from './answer-call.js';
import { revisionMessages } from './prompts.js';
import type { SuiteItem } from './suite.js';

/**
 * The isolated self-correction control: each agent of the panel revises its own answer alone,
 * once for every critique turn it made in the debate on the same item, with no peer's words and
 * no mention that peers exist. Round 0 is the debate's own (already paid for and charged to the
 * control), so both arms start from the same answers and differ only in what the agent reads
 * between rounds: its peers' positions, or nothing but its own. The agents' last answers are
 * then majority-voted. Its agent calls equal the debate's debater calls on the item.
 */
export interface SelfCorrectionCapture {
  /** False for a protocol with no independent round 0 to revise; `note` says why. */
  available: boolean;
  note: string | null;
  agents: SelfCorrectionAgent[];
}

export interface SelfCorrectionAgent {
  agentId: string;
  model: string;
  /** Its revisions in order (revision r is round r). */
  revisions: AnswerOutcome[];
}

/** The longest previous answer put back to the agent, in characters. */
const MAX_PREVIOUS_CHARS = 4000;

/** Kinds whose round 0 is each agent answering alone (a parallel run has no critique turn, so nothing to revise; a Delphi run's revision rounds count as its critique turns). */
const REVISABLE = new Set(['debate', 'tournament', 'parallel', 'delphi']);

/** How many revisions each agent makes: the critique turns (first attempts) it made in the debate. */
export function revisionCounts(calls: readonly StoredCall[], agentIds: readonly string[]): Map<string, number> {
  const counts = new Map(agentIds.map((id) => [id, 0]));
  for (const c of calls) if (c.stage === 'critique' && c.attempt === 0 && counts.has(c.agentId)) counts.set(c.agentId, counts.get(c.agentId)! + 1);
  return counts;
}

/** The agent's round-0 answer in the debate, as it is put back to it; null when it had none usable. */
export function openingText(debate: StoredDebate, agentId: string): string | null {
  const turn = debate.turns.find((t) => t.round === 0 && t.agentId === agentId);
  if (turn === undefined || turn.status !== 'ok' || turn.position === null) return null;
  const reasoning = turn.opening?.reasoning?.trim();
  return clip(reasoning ? `${turn.position}\n\nReasoning: ${reasoning}` : turn.position, MAX_PREVIOUS_CHARS);
}

function revisedText(outcome: AnswerOutcome): string | null {
  if (outcome.answer === null) return null;
  return clip(outcome.reasoning ? `${outcome.reasoning}\n\nFinal answer: ${outcome.answer}` : `Final answer: ${outcome.answer}`, MAX_PREVIOUS_CHARS);
}

export interface SelfCorrectionSpec {
  item: SuiteItem;
  preset: Preset;
  debate: StoredDebate;
  /** Makes one revision call for the agent at `agentIndex` (recorded by the caller). */
  revise: (agentIndex: number, round: number, messages: ChatMessage[]) => Promise<AnswerOutcome>;
  signal?: AbortSignal;
}

/** Runs the control: agents side by side, each one's revisions one after another. */
export async function selfCorrection(spec: SelfCorrectionSpec): Promise<SelfCorrectionCapture> {
  const kind = spec.debate.preset.protocol.kind ?? 'debate';
  if (!REVISABLE.has(kind)) return { available: false, note: `${withArticle(kind)} run has no round of independent answers to revise`, agents: [] };
  const counts = revisionCounts(spec.debate.calls, spec.preset.agents.map((a) => a.id));
  const agents = await Promise.all(
    spec.preset.agents.map(async (agent, index): Promise<SelfCorrectionAgent> => {
      const revisions: AnswerOutcome[] = [];
      let previous = openingText(spec.debate, agent.id);
      for (let round = 1; round <= counts.get(agent.id)! && !spec.signal?.aborted; round++) {
        const outcome = await spec.revise(index, round, revisionMessages(spec.item, agent.persona, round, previous));
        revisions.push(outcome);
        previous = revisedText(outcome);
      }
      return { agentId: agent.id, model: agent.model, revisions };
    }),
  );
  return { available: true, note: null, agents };
}
