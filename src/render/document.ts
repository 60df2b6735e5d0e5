import type { StoredDebate } from '../store/store.js';
import { confidenceOf } from './confidence.js';
import { adviceOf, fallbacksOf, protocolDocument } from './protocols.js';
import { qualityDocument } from './quality.js';
import { tensionDocument } from './tensions.js';
import { materialDocument } from './material.js';
import { votingDocument } from './voting.js';
import { placeText } from './place.js';
import { constraintsView } from './constraints.js';
import { panelDocument } from './panel.js';

/** Version of the JSON document written by `show --json`, `export --format json` and `run --json`. */
export const DOCUMENT_VERSION = 1;

/**
 * The whole stored debate as one JSON-ready object (format described in docs/record.md).
 * Field names are stable within a version; new fields may be added.
 */
export function debateDocument(d: StoredDebate): Record<string, unknown> {
  const roundNumbers = [...new Set([...d.turns.map((t) => t.round), ...d.rounds.map((r) => r.round)])].sort((a, b) => a - b);
  return {
    id: d.id,
    format: 'conclave.debate',
    version: DOCUMENT_VERSION,
    question: d.question,
    status: d.status,
    exitReason: d.exitReason,
    exitDetail: d.exitDetail ?? null,
    error: d.error,
    roundsCompleted: d.roundsCompleted,
    finalConvergence: d.finalConvergence,
    engineVersion: d.engineVersion,
    host: d.host,
    createdAt: new Date(d.createdAt).toISOString(),
    finishedAt: d.finishedAt === null ? null : new Date(d.finishedAt).toISOString(),
    preset: d.preset,
    presetHash: d.presetHash,
    plan: d.plan ?? null,
    agents: d.agents,
    rounds: roundNumbers.map((round) => {
      const j = d.rounds.find((r) => r.round === round) ?? null;
      return {
        round,
        judge: j && {
          status: j.status,
          recommendation: j.score?.recommendation ?? null,
          facts: j.score?.facts ?? null,
          caveats: j.score?.caveats ?? null,
          rationale: j.score?.rationale ?? null,
          convergence: j.convergence,
          error: j.error,
        },
        turns: d.turns.filter((t) => t.round === round),
      };
    }),
    synthesis: d.synthesis,
    confidence: confidenceOf(d),
    // Model families, each round's stances with every agent's move, and the conformity figures (docs/confidence.md); null for older records.
    panel: panelDocument(d),
    resumptions: (d.resumptions ?? []).map((r) => ({ fromRound: r.fromRound, callsBefore: r.callsBefore, reused: r.reused ?? [], host: r.host, at: new Date(r.at).toISOString() })),
    protocol: protocolDocument(d),
    synthesisAttempts: (d.synthesisAttempts ?? []).map((a) => ({ ...a, at: new Date(a.at).toISOString() })),
    voting: votingDocument(d),
    // The orchestrator's fallback analyses in the seats whose turn failed (a debate or parallel run); empty when none.
    fallbacks: fallbacksOf(d),
    // `protocol.kind: auto`: how the advisor classified the question, the rule that chose the protocol, and what ran; null when the preset named the protocol.
    advice: adviceOf(d),
    // The merged constraints and collisions the synthesis was given, each with its resolution; null when neither the user nor any agent stated any.
    constraints: constraintsView(d),
    tensionMap: tensionDocument(d),
    ...materialDocument(d),
    quality: qualityDocument(d),
    calls: d.calls.map((c) => ({
      id: c.id,
      stage: c.stage,
      round: c.round,
      // Where the call sits, in words: `round` alone would read a targeted call or a pipeline phase as a critique round.
      place: placeText(c.stage, c.round),
      agentId: c.agentId,
      attempt: c.attempt,
      host: c.host,
      api: c.api ?? 'ollama',
      model: c.model,
      status: c.status,
      startedAt: new Date(c.startedAt).toISOString(),
      finishedAt: new Date(c.finishedAt).toISOString(),
      metrics: c.metrics,
      options: c.options,
      format: c.format,
      messages: c.messages,
      think: c.think ?? null,
      thinking: c.thinking ?? null,
      thinkingTokens: c.thinkingTokens ?? null,
      raw: c.raw,
      partial: c.partial === true,
      parsed: c.parsed,
      validationError: c.validationError,
      normalized: c.normalized ?? [],
      error: c.error,
      truncation: c.truncation,
      material: c.material ?? null,
      budget: c.budget ?? null,
    })),
  };
}
