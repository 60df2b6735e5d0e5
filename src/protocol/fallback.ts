import type { ChatMessage } from './records.js';

/**
 * The orchestrator's fallback analysis (seed 002): when an answerer gives no usable answer, the
 * orchestrator answers the same request in its place, told who failed and why, so the work
 * after it can go on. A decomposition's decomposer writes one for a failed part; a debate's
 * synthesizer model writes one for a failed seat. It is always recorded and shown as a
 * fallback, never as the answerer's own.
 */
export function withFallbackNote(messages: readonly ChatMessage[], note: readonly string[]): ChatMessage[] {
  const last = messages.at(-1)!;
  return [...messages.slice(0, -1), { ...last, content: `${[...note, ''].join('\n')}\n${last.content}` }];
}

/** The note on a failed seat's request: whose seat, what failed, and that peers will read it as a fallback. */
export function seatFallbackNote(agentId: string, round: number, failure: string): string[] {
  return [
    `${agentId}'s ${round === 0 ? 'answer' : `turn in round ${round}`} failed (${failure}). You are the orchestrator of this panel: write a fallback analysis for ${agentId}'s seat, from the brief below, so the debate can go on without a hole.`,
    `The panel will read it as your fallback analysis, not as ${agentId}'s own. Keep to what you can support, and say in the reasoning what ${agentId}'s own answer would still need to check.`,
  ];
}

/** How peers, the judge and the synthesizer read a fallback seat's position. */
export function markedFallback(agentId: string, text: string): string {
  return `[Fallback analysis by the orchestrator, not ${agentId}'s own: ${agentId}'s answer failed.] ${text}`;
}
