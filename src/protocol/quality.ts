/**
 * Quality indicators for one agent result (docs/quality.md). A pure, deterministic rating
 * from what the engine knows of the result: the parsed value, and how the call that
 * produced it went. Each rule takes a fixed number of points off 100 and says why, so a
 * score can always be read back as its reasons.
 */

export type QualityAction = 'PASS' | 'WARN' | 'RETRY' | 'REJECT';

export interface QualityRating {
  /** 0 to 100. */
  score: number;
  action: QualityAction;
  /** One line per rule that took points off, in the order of the rules; empty for a clean result. */
  reasons: string[];
  /** What the result stated beside its answer (docs/orchestration.md); absent for a kind of result that states none. */
  indicators?: QualityIndicators;
}

/** Seed 002's `has_trade_offs` and `constraint_count`: recorded with the rating, they take no points off. */
export interface QualityIndicators {
  hasTradeOffs: boolean;
  constraintCount: number;
}

/** What a result says, read from its parsed value. */
export interface ResultFacts {
  /** The answer the result stands for (an opening's position, a critique's updated position). */
  position: string;
  /** The reasoning given with it; leave undefined for a kind of result that has none. */
  reasoning?: string;
  /** The agent's own confidence, 0 to 1. */
  confidence?: number;
  /** For a critique: how many peers it was shown, and how many agreements and disagreements it wrote. */
  peers?: number;
  engaged?: number;
  /** Trade-offs and constraints it stated; leave undefined for a kind of result whose schema has none. */
  tradeOffs?: number;
  constraints?: number;
}

/** How the call that produced the result went. */
export interface CallFacts {
  /** The accepted reply came from a repair request (the first one was not valid JSON for the schema). */
  repaired: boolean;
  /** Ollama stopped the accepted reply at num_predict (`done_reason: length`). */
  cutAtLimit: boolean;
  /** The prompt was shortened to fit num_ctx (peers' or dependencies' text clipped). */
  truncatedPrompt: boolean;
  /** Changes the engine made to bring the value within what the debate can use. */
  normalized: number;
}

/** Points each rule takes off; the thresholds that map a score to an action. */
export const QUALITY_RULES = {
  cutAtLimit: 35,
  shortPosition: 25,
  noReasoning: 25,
  repaired: 20,
  noEngagement: 15,
  lowConfidence: 15,
  truncatedPrompt: 10,
  normalized: 5,
  /** A position of fewer words than this is short. */
  minWords: 3,
  /** An agent confidence below this is low. */
  confidenceFloor: 0.2,
  /** Scores from `pass` up pass, from `warn` warn, from `retry` are retried; below, rejected. */
  pass: 75,
  warn: 50,
  retry: 25,
} as const;

/**
 * Rates one agent result. `retried` says this result is the answer to a retry: a retry is
 * asked once, so a second RETRY is kept as WARN (a weak answer the panel still hears, with a
 * warning), while a REJECT stays REJECT. A position with no word in it (blank, or only
 * punctuation) is rejected whatever else holds: there is nothing to weigh.
 */
export function rateResult(result: ResultFacts, call: CallFacts, retried = false): QualityRating {
  const R = QUALITY_RULES;
  const reasons: string[] = [];
  let score = 100;
  const off = (points: number, reason: string): void => {
    score -= points;
    reasons.push(`${reason} (−${points})`);
  };

  const indicators: Pick<QualityRating, 'indicators'> =
    result.tradeOffs === undefined && result.constraints === undefined ? {} : { indicators: { hasTradeOffs: (result.tradeOffs ?? 0) > 0, constraintCount: result.constraints ?? 0 } };
  const words = countWords(result.position, R.minWords);
  if (words === 0) {
    return { score: 0, action: 'REJECT', reasons: ['the position has no words in it'], ...indicators };
  }
  if (call.cutAtLimit) off(R.cutAtLimit, 'the reply was cut off at num_predict');
  if (words < R.minWords) off(R.shortPosition, `the position is ${words === 1 ? 'one word' : `${words} words`}`);
  if (result.reasoning !== undefined && countWords(result.reasoning, 1) === 0) off(R.noReasoning, 'no reasoning given');
  if (call.repaired) off(R.repaired, 'the first reply was not valid for the schema and needed a repair');
  if (result.peers !== undefined && result.peers > 0 && (result.engaged ?? 0) === 0) off(R.noEngagement, 'it names no peer it agrees or disagrees with');
  const confidence = result.confidence;
  if (confidence !== undefined && Number.isFinite(confidence) && confidence < R.confidenceFloor) {
    off(R.lowConfidence, `the agent's own confidence is ${round2(confidence)}`);
  }
  if (call.truncatedPrompt) off(R.truncatedPrompt, 'its prompt was shortened to fit num_ctx');
  if (call.normalized > 0) off(R.normalized, 'the engine had to adjust the reply');

  score = Math.max(0, score);
  let action: QualityAction = score >= R.pass ? 'PASS' : score >= R.warn ? 'WARN' : score >= R.retry ? 'RETRY' : 'REJECT';
  if (action === 'RETRY' && retried) {
    action = 'WARN';
    reasons.push('kept after its one retry');
  }
  return { score, action, reasons, ...indicators };
}

/** Words (runs of letters or digits) in `text`, counting no further than `enough`: huge text costs no more than short. */
function countWords(text: string, enough: number): number {
  const word = /[\p{L}\p{N}]+/gu;
  let n = 0;
  while (n < enough && word.exec(text) !== null) n++;
  return n;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
