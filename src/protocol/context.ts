import type { ChatMessage } from './records.js';
import type { PeerView } from './prompts.js';

/**
 * Context sizing. Ollama silently drops the oldest messages when a prompt exceeds
 * num_ctx, and reloads a model whenever num_ctx changes, so each model gets one
 * num_ctx per debate, sized from the panel up front, and prompts are fitted to it.
 */

/** Conservative token estimate: about 3.5 characters per token for English and JSON, plus per-message framing. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3.5);
}

export function estimateMessagesTokens(messages: ChatMessage[]): number {
  return messages.reduce((sum, m) => sum + estimateTokens(m.content) + 8, 0);
}

export const MIN_NUM_CTX = 4096;
/** Prompt scaffolding around the variable parts (instructions, labels). */
const SCAFFOLD_TOKENS = 450;

export interface ContextNeeds {
  agentCount: number;
  maxRounds: number;
  questionTokens: number;
  maxPersonaTokens: number;
  maxAnswerTokens: number;
}

export interface StageBudget {
  /** Tokens the prompt is expected to need at most. */
  prompt: number;
  /** Tokens reserved for the reply (num_predict). */
  reply: number;
}

/** Expected prompt and reply sizes per stage, from the panel's shape. */
export function stageBudgets(needs: ContextNeeds): Record<'opening' | 'critique' | 'judge' | 'synthesis', StageBudget> {
  const peers = Math.max(1, needs.agentCount - 1);
  const answer = needs.maxAnswerTokens;
  const fixed = SCAFFOLD_TOKENS + needs.questionTokens + needs.maxPersonaTokens;
  return {
    opening: { prompt: fixed, reply: answer },
    critique: { prompt: fixed + answer + peers * answer, reply: Math.round(answer * 1.5) },
    judge: { prompt: SCAFFOLD_TOKENS + needs.questionTokens + needs.agentCount * answer, reply: 400 },
    synthesis: {
      prompt: SCAFFOLD_TOKENS + needs.questionTokens + (needs.maxRounds + 1) * needs.agentCount * Math.round(answer * 0.8),
      reply: 1500,
    },
  };
}

/** Round a context size up to a multiple of 2048, within [MIN_NUM_CTX, modelMax]. */
export function chooseNumCtx(neededTokens: number, modelMax: number | null): number {
  const rounded = Math.max(MIN_NUM_CTX, Math.ceil(neededTokens / 2048) * 2048);
  return modelMax && modelMax > 0 ? Math.min(rounded, modelMax) : rounded;
}

export interface FitResult {
  peers: PeerView[];
  /** Characters cut from peers' text; 0 when nothing was shortened. */
  droppedChars: number;
}

/**
 * Shorten peers' text so that fixed + peers fits in `budgetTokens`.
 * Each peer keeps an equal share, short answers are left whole and their unused
 * share goes to the long ones. Returns null when even empty peers would not fit.
 */
export function fitPeers(fixedTokens: number, peers: PeerView[], budgetTokens: number): FitResult | null {
  const framing = 12;
  const available = budgetTokens - fixedTokens - peers.length * framing;
  const minPerPeer = 40;
  if (available < peers.length * minPerPeer) return null;
  const total = peers.reduce((s, p) => s + estimateTokens(p.position), 0);
  if (total <= available) return { peers, droppedChars: 0 };

  const order = peers.map((p, i) => ({ i, tokens: estimateTokens(p.position) })).sort((a, b) => a.tokens - b.tokens);
  const allowance = new Array<number>(peers.length).fill(0);
  let left = available;
  for (let k = 0; k < order.length; k++) {
    const entry = order[k]!;
    const share = Math.floor(left / (order.length - k));
    const give = Math.min(entry.tokens, share);
    allowance[entry.i] = give;
    left -= give;
  }
  let dropped = 0;
  const fitted = peers.map((p, i) => {
    const maxChars = Math.floor((allowance[i] ?? 0) * 3.5);
    if (p.position.length <= maxChars) return p;
    dropped += p.position.length - maxChars;
    return { ...p, position: `${p.position.slice(0, Math.max(0, maxChars - 1)).trimEnd()}…`, shortened: true };
  });
  return { peers: fitted, droppedChars: dropped };
}
