import { type DelphiMode, type DelphiOutcome, delphiSection, delphiStop, estimateOf, isNumeric, modalStance, spreadOf, summarize } from '../../protocol/delphi.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import type { ExitReason } from '../../protocol/records.js';
import type { ProtocolOutcome, RecordedCalls, Runner } from '../runner.js';
import type { Protocol } from './types.js';
import { type Shown, anonymousRound } from '../primitives/anonymous-round.js';
import { requireAnswers } from '../primitives/fan-out.js';
import { judgeConvergence } from '../primitives/judge.js';
import { synthesize } from '../primitives/synthesize.js';

/**
 * The Delphi method: every agent answers alone (round 0). If more than half of the answers carry a
 * number, the question is numeric. Then anonymous rounds: each agent reads the others' last answers
 * with no name, in a seeded shuffled order, and for a numeric question the median and quartiles of
 * their numbers, and revises its answer with a reason. A numeric round's spread is its
 * interquartile range; otherwise the judge groups the answers into stances and the spread is the
 * share outside the modal stance. The rounds end when the spread stops narrowing (or none is left),
 * or at maxRounds. The result is the median, or the modal stance with the others beside it; the
 * synthesizer writes the answer from it and keeps the dissent. No optional stage runs: the tension
 * map's exchange and a vote would name peers (docs/protocol-delphi.md).
 * Calls: n per round, + 1 judge per round for a question that is not numeric, + 1 synthesis.
 */
export const delphi: Protocol = {
  kind: 'delphi',
  shape: (preset) => ({
    support: [preset.judge.model, preset.synthesizer.model ?? ''],
    synthesisModels: [preset.synthesizer.model ?? ''],
    usesJudge: true,
    stages: [],
  }),
  run: runDelphi,
};

async function runDelphi(runner: Runner, from: TranscriptRound[], recorded?: RecordedCalls): Promise<ProtocolOutcome> {
  const { preset } = runner;
  const { maxRounds } = preset.protocol;
  const judge = preset.judge.model;
  const synthesizer = preset.synthesizer.model ?? '';
  const rounds: TranscriptRound[] = [];
  const spreads: (number | null)[] = [];
  let numeric = false;
  let stop: { reason: ExitReason; detail: string } | null = null;

  for (let round = 0; !stop; round++) {
    runner.checkpoint();
    const previous = rounds.at(-1);
    const mode: DelphiMode = round === 0 ? 'open' : numeric ? 'numeric' : 'stances';
    const summary = previous && numeric ? summarize(numbersOf(previous)) : null;
    // A stored round is taken as it was, with the step recorded for it then.
    const stored = from[round];
    let current: TranscriptRound;
    let shown: Shown[] = [];
    if (stored) current = { ...stored };
    else if (round > 0 && runner.tally.exhausted()) {
      // The budget is spent: no further round; the synthesis (essential) still runs on what exists.
      const detail = `the token budget (${runner.tally.limit?.toLocaleString('en-US')} tokens) was spent after round ${round - 1}`;
      runner.budgetDecision({ kind: 'stop', stage: null, round: round - 1, agentId: null, detail });
      stop = { reason: 'budget', detail };
      break;
    } else {
      runner.startRound(round);
      const asked = await anonymousRound(runner, round, previous?.turns ?? [], mode, summary, [judge, synthesizer], round === from.length ? recorded : undefined);
      // A round cut by an interruption is asked again on resume: it gets no step.
      runner.checkpoint();
      current = { round, turns: asked.turns, judgement: null };
      shown = asked.shown;
    }
    rounds.push(current);
    // Round 0 needs two usable answers; a later round short of answers measures no spread and stops nothing.
    if (round === 0) numeric = isNumeric(requireAnswers(runner, current.turns, 0));
    const usable = usableIn(current);
    // The judge groups a question that is not numeric into stances; a numeric one needs no judge, nor
    // does a round with fewer than two usable answers: there is nothing to group, and no score to show.
    const judgeNow = !numeric && !current.judgement && usable >= 2;
    if (judgeNow) {
      current.judgement = await judgeConvergence(runner, round, current.turns, previous?.judgement?.stances ?? null, rounds.map((r) => r.judgement?.stances ?? null));
      runner.checkpoint();
    }
    const numbers = numeric ? summarize(numbersOf(current)) : null;
    const modal = numeric ? null : modalStance(current.judgement?.stances, usable);
    // One usable answer is no agreement: its spread is not measured.
    spreads.push(usable >= 2 ? spreadOf(numbers, modal, numeric) : null);
    // Recorded in the same tick as the round's last turn or its judge's score, so a stored round has its step.
    if (!stored || judgeNow) {
      const estimates = current.turns.map((t) => ({ agentId: t.agentId, estimate: estimateOf(t) }));
      runner.step({ kind: 'delphi', round, numeric, estimates, summary: numbers, mode: modal, spread: spreads[round] ?? null, shown });
    }
    // A revision round with fewer than two usable answers ends the revising: a panel that no longer
    // answers would otherwise be asked again to the round limit, and its empty rounds read as a result.
    stop = usable < 2 ? shortRound(round, usable, current.turns.length, rounds) : delphiStop(spreads, round, maxRounds);
  }

  const last = rounds.at(-1)!;
  stop ??= { reason: 'max_rounds', detail: 'no round left' };
  runner.exit(stop.reason, last.round, stop.detail);
  // The result is the last round with two usable answers (round 0 has them, or the run failed).
  const basisAt = rounds.findLastIndex((r) => usableIn(r) >= 2);
  const basis = rounds[basisAt]!;
  const of = usableIn(basis);
  const outcome: DelphiOutcome = {
    numeric,
    summary: numeric ? summarize(numbersOf(basis)) : null,
    mode: numeric ? null : modalStance(basis.judgement?.stances, of),
    of,
  };
  runner.step({ kind: 'delphi-result', ...outcome, rounds: last.round, spreads, stopped: stop.detail });
  runner.checkpoint();
  // The synthesizer reads the rounds up to the one the result comes from, so it lists as failed the agents of that round.
  const synthesis = await synthesize(runner, rounds.slice(0, basisAt + 1), [delphiSection(outcome, basis.turns)]);
  runner.checkpoint();
  return { exitReason: stop.reason, exitDetail: stop.detail, rounds, synthesis };
}

const usableIn = (round: TranscriptRound): number => round.turns.filter((t) => t.status === 'ok').length;

/** Why the rounds end at a revision round with fewer than two usable answers; the result is the last round that had two. */
function shortRound(round: number, usable: number, asked: number, rounds: readonly TranscriptRound[]): { reason: ExitReason; detail: string } {
  const basis = rounds.findLast((r) => usableIn(r) >= 2);
  return {
    reason: 'too_few_answers',
    detail: `round ${round} had ${usable} usable answer${usable === 1 ? '' : 's'} of ${asked}, so the revising stopped; the result is that of round ${basis?.round ?? 0}`,
  };
}

/** The numbers a round's usable answers carry. */
function numbersOf(round: TranscriptRound): number[] {
  return round.turns.map(estimateOf).filter((e): e is number => e !== null);
}
