import type { AgentRole, ProtocolKind } from '../config/preset-schema.js';
import type { Advice } from '../protocol/advice.js';
import type { Collision, MergedConstraint, StatedConstraint } from '../protocol/constraints.js';
import type { SubQuestion } from '../protocol/decompose.js';
import type { Finding, Observation } from '../protocol/pipeline.js';
import { PHASE_ROUND, type PipelinePhase } from '../protocol/phases.js';
import type { Pairing } from '../protocol/tournament.js';
import type { Framing, Ruling, Sides } from '../protocol/oxford.js';
import type { RoundStances } from '../protocol/stances.js';
import type { TrajectoryChoice } from '../protocol/trajectory-decision.js';
import type { ModalStance, NumberSummary } from '../protocol/delphi.js';

/**
 * What a protocol records beyond turns, judge scores and the synthesis: the shape of its
 * run (a bracket, a decomposition tree) and how the synthesizer was chosen. Each step is
 * one `protocol.step` event, stored in order and replayed as it came.
 */
export type ProtocolStep =
  | {
      kind: 'synthesizer';
      model: string;
      rotate: boolean;
      turn: number;
      candidates: string[];
      /** Panel agents running the same model. */
      panelAgents: string[];
    }
  | { kind: 'bracket'; round: number; seeding: string[]; pairings: Pairing[] }
  /** The judge's stances of one round, normalised, with each agent's move since the last (src/protocol/stances.ts). */
  | ({ kind: 'stances' } & RoundStances)
  | {
      kind: 'verdict';
      round: number;
      match: number;
      a: string;
      b: string;
      winner: string;
      reasons: string[];
      /** `judged`: the judge decided; `walkover`: one side had no usable turn; `fallback`: the judge failed and the higher seed advanced. */
      decidedBy: 'judged' | 'walkover' | 'fallback';
      error: string | null;
    }
  | { kind: 'champion'; agentId: string; runnerUp: string | null; position: string | null }
  /** `protocol.kind: oxford`: the motion as put to the panel, how the question was framed, and who speaks on each side. */
  | ({ kind: 'motion'; motion: string; framing: Framing } & Sides)
  /** `protocol.kind: oxford`: the judge's verdict after the closings (round 2); null when the judge gave none usable. */
  | { kind: 'ruling'; round: number; ruling: Ruling | null; error: string | null }
  | {
      /** `protocol.advocate`: who argued against the majority in a critique round, what it raised, and who moved in the round after (null: no round followed). */
      kind: 'advocate';
      round: number;
      agentId: string;
      against: string | null;
      raised: string | null;
      moved: string[] | null;
    }
  /** `protocol.decision: trajectory`: the position the Free-MAD trajectory score chose for the synthesis, every position's score, and the final round's majority. */
  | ({ kind: 'trajectory' } & TrajectoryChoice)
  | {
      /**
       * `protocol.kind: delphi`, one per round: whether the question is read as numeric, each panelist's
       * number, the round's median and quartiles or its modal stance, its spread, and from round 1 the
       * seed and the order in which each panelist was shown the others' answers (never named in its prompt).
       */
      kind: 'delphi';
      round: number;
      numeric: boolean;
      estimates: { agentId: string; estimate: number | null }[];
      summary: NumberSummary | null;
      mode: ModalStance | null;
      spread: number | null;
      shown: { agentId: string; seed: string; order: string[] }[];
    }
  | {
      /** `protocol.kind: delphi`: what the rounds came to (the median, or the modal stance with its spread) and why they stopped. */
      kind: 'delphi-result';
      numeric: boolean;
      rounds: number;
      summary: NumberSummary | null;
      mode: ModalStance | null;
      of: number;
      spreads: (number | null)[];
      stopped: string;
    }
  | { kind: 'split'; decomposer: string; subQuestions: SubQuestion[]; notes: string[] }
  | {
      kind: 'subanswer';
      index: number;
      agentId: string;
      status: 'ok' | 'failed' | 'skipped';
      answer: string | null;
      confidence: number | null;
      reason: string | null;
      /** The typed constraints and trade-offs the sub-answer stated, when it stated any. */
      constraints?: StatedConstraint[];
      tradeOffs?: string[];
      /** Set when the decomposer (`agentId`) answered in place of the assignee, whose call failed. */
      fallback?: { failedAgent: string; failure: string };
    }
  | {
      /**
       * A debate's or parallel run's seat whose turn failed (rejected, timed out, its host failed):
       * the orchestrator's fallback analysis in its place, read by peers, the judge and the
       * synthesizer as a fallback, never as the agent's own (docs/protocols.md).
       */
      kind: 'fallback';
      round: number;
      agentId: string;
      /** The orchestrator's model that wrote it: the synthesizer's. */
      model: string;
      /** Why the agent's own turn failed. */
      failure: string;
      status: 'ok' | 'failed';
      position: string | null;
      reasoning: string | null;
      confidence: number | null;
      error: string | null;
    }
  | {
      /** `protocol.kind: auto`: how the advisor classified the question, which protocol the rules chose among which, and what the run became. */
      kind: 'advice';
      model: string;
      status: 'ok' | 'failed';
      choices: ProtocolKind[];
      advice: Advice | null;
      /** The protocol run: the one the rules chose from the advice, or `debate` when the advisor failed. */
      chosen: ProtocolKind;
      /** The rule that chose it, in words (`parts: dependent → decompose (…)`); absent in older records. */
      rule?: string;
      maxRounds: number;
      tokenBudget: number | null;
      error: string | null;
    }
  | {
      /** The panel's constraints merged, and the collisions the synthesis (or reassembly) was told to resolve. */
      kind: 'constraints';
      stage: 'synthesis' | 'reassembly';
      constraints: MergedConstraint[];
      collisions: Collision[];
      tradeOffs: { agentId: string; tradeOff: string }[];
    }
  | { kind: 'phase'; phase: PipelinePhase; agents: { id: string; role: AgentRole }[] }
  | {
      kind: 'observations';
      phase: PipelinePhase;
      agentId: string;
      role: AgentRole;
      status: 'ok' | 'failed' | 'skipped';
      summary: string | null;
      observations: Observation[];
      /** A reviewer's prompt carried the lead's plan (false: it ran as a generic reviewer). */
      withPlan: boolean;
      notes: string[];
      error: string | null;
    }
  | {
      /** The engine made a blocking observation below the threshold non-blocking. */
      kind: 'downgrade';
      phase: PipelinePhase;
      agentId: string;
      observationId: string;
      confidence: number;
      threshold: number;
      text: string;
    }
  | {
      kind: 'report';
      mode: 'list' | 'artifact';
      /** The filter agent's id, or `synthesizer` when the synthesizer model filtered. */
      filter: string;
      model: string;
      status: 'ok' | 'failed';
      summary: string | null;
      /** list mode: the reduced findings, blocking first, F1, F2, …; artifact mode: every observation, blocking first. */
      findings: Finding[];
      artifact: { title: string; document: string } | null;
      notes: string[];
      error: string | null;
    };

export type ProtocolStepKind = ProtocolStep['kind'];

/** The last recorded step of a kind (a debate's `steps`), or null when there is none. */
export function lastStep<K extends ProtocolStepKind>(steps: readonly { step: ProtocolStep }[] | undefined, kind: K): Extract<ProtocolStep, { kind: K }> | null {
  for (let i = (steps?.length ?? 0) - 1; i >= 0; i--) {
    const step = steps![i]!.step;
    if (step.kind === kind) return step as Extract<ProtocolStep, { kind: K }>;
  }
  return null;
}

/** The step's round, for ordering in a replay: bracket rounds, sub-question numbers, 0 otherwise. */
export function stepRound(step: ProtocolStep): number {
  switch (step.kind) {
    case 'bracket':
    case 'verdict':
    case 'stances':
    case 'ruling':
    case 'delphi':
      return step.round;
    case 'delphi-result':
      return step.rounds;
    case 'subanswer':
      return step.index;
    case 'phase':
    case 'observations':
    case 'downgrade':
      return PHASE_ROUND[step.phase];
    case 'report':
      return PHASE_ROUND.final;
    default:
      return 0;
  }
}

/** Steps that open their round in a replay (shown before its turns); the others close it. */
export function opensRound(step: ProtocolStep): boolean {
  return step.kind === 'bracket' || step.kind === 'synthesizer' || step.kind === 'phase' || step.kind === 'motion';
}

export type ProtocolEvent = { type: 'protocol.step'; step: ProtocolStep; at: number };
