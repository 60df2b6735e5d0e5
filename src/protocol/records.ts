import type { Critique, JudgeScore, Opening } from './schemas.js';
import type { RoundStances } from './stances.js';

// The records the protocol layer reads and writes prompts from: defined here, below the engine,
// which re-exports them with its events (engine/events.ts).

/** Why the run stopped: the debate's exits, then the other protocols' ends (docs/protocols.md). */
export type ExitReason =
  | 'converged'
  | 'max_rounds'
  | 'too_few_answers'
  | 'interrupted'
  | 'error'
  | 'answered'
  | 'champion'
  | 'reassembled'
  | 'budget'
  | 'filtered'
  | 'verdict'
  /** Delphi: the spread of the panel's answers stopped narrowing. */
  | 'stable';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** An agent's outcome for one round, after any repair. */
export interface TurnRecord {
  round: number;
  agentId: string;
  model: string;
  status: 'ok' | 'invalid' | 'failed';
  /** The position the agent holds after this turn (opening position or updated position). */
  position: string | null;
  confidence: number | null;
  opening: Opening | null;
  critique: Critique | null;
  error: string | null;
  /** Set on a seat the orchestrator filled after the agent's turn failed (`failure` says why); the stored turn stays the failed one. */
  fallback?: { failure: string };
}

export interface RoundJudgement {
  round: number;
  status: 'ok' | 'failed';
  score: JudgeScore | null;
  /** Mean of the three axes; null when the judge failed. */
  convergence: number | null;
  error: string | null;
  /** The panel grouped by stance, normalised, with each agent's move (recorded as a `stances` step); absent when not judged. */
  stances?: RoundStances;
}
