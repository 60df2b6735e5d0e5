import { assignSides, frameMotion, OXFORD_PHASES, OXFORD_ROUND, oxfordSection, type Ruling, rulingOf, SIDES, type Sides, sideOf, speechText, type SpeechView } from '../../protocol/oxford.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import type { TurnRecord } from '../events.js';
import type { ProtocolOutcome, RecordedCalls, Runner } from '../runner.js';
import type { Protocol } from './types.js';
import { DebateFailedError } from '../../errors.js';
import { answerSpeech, judgeMotion, openingSpeech, speechRound } from '../primitives/speeches.js';
import { synthesize } from '../primitives/synthesize.js';

/**
 * The Oxford debate: the question is put as a motion, and the panel splits into two sides, for
 * and against (each agent's `side`, or alternated in panel order). Round 0: every speaker opens
 * alone. Round 1: each rebuts the other side's openings. Round 2: each closes, answering the
 * other side's rebuttals. A speaker reads its own last speech and the other side's, never its
 * own side's other speeches. The judge then gives a verdict: the winning side, its reasons, the
 * margin, the decisive argument and the losing side's best point, which the synthesizer keeps.
 * Calls for n agents: 3n speeches, 1 verdict, 1 synthesis.
 */
export const oxford: Protocol = {
  kind: 'oxford',
  shape: (preset) => ({
    support: [preset.judge.model, preset.synthesizer.model ?? ''],
    synthesisModels: [preset.synthesizer.model ?? ''],
    usesJudge: true,
    // No tension map or vote: the sides clash on the motion by design (the preset check refuses a vote).
    stages: [],
  }),
  run: runOxford,
};

async function runOxford(runner: Runner, from: TranscriptRound[], recorded?: RecordedCalls): Promise<ProtocolOutcome> {
  const { preset } = runner;
  const sides = assignSides(preset.agents);
  const motion = frameMotion(runner.question);
  const side = (id: string) => sideOf(sides, id);
  const judge = [preset.judge.model];
  // The motion is recorded once: a resumed run that has stored speeches recorded it before.
  if (from.length === 0 && !recorded?.size) {
    runner.step({ kind: 'motion', ...motion, ...sides });
    if (preset.tensions?.enabled) runner.warn("the preset's tension map is not run in an Oxford debate: its sides clash on the motion by design");
    if (motion.framing === 'open') runner.warn(`the question is open, not a yes/no motion: the for side defends the most direct course it names or implies. For a sharper debate, phrase it as "This house would …"`);
  }
  // Each phase is one round of the record; a stored round is kept, the one left incomplete goes on from its recorded speeches.
  const phase = async (round: number, prepare: Parameters<typeof speechRound>[3]): Promise<TranscriptRound> => {
    const stored = from[round];
    if (stored) return stored;
    runner.checkpoint();
    runner.startRound(round);
    const turns = await speechRound(runner, round, preset.agents, prepare, judge, from.length === round ? recorded : undefined);
    runner.checkpoint();
    return { round, turns, judgement: null };
  };
  const turnOf = (r: TranscriptRound, id: string): TurnRecord | undefined => r.turns.find((t) => t.agentId === id && t.status === 'ok');
  const otherSide = (r: TranscriptRound, id: string): TurnRecord[] => r.turns.filter((t) => side(t.agentId) !== side(id));

  const openings = await phase(OXFORD_ROUND.opening, (a) => openingSpeech(runner, motion, side(a.id), a));
  requireBothSides(runner, sides, openings.turns);
  const rebuttals = await phase(OXFORD_ROUND.rebuttal, (a) => answerSpeech(runner, 'rebuttal', OXFORD_ROUND.rebuttal, motion, side(a.id), a, turnOf(openings, a.id), otherSide(openings, a.id)));
  const closings = await phase(OXFORD_ROUND.closing, (a) =>
    answerSpeech(runner, 'closing', OXFORD_ROUND.closing, motion, side(a.id), a, turnOf(rebuttals, a.id) ?? turnOf(openings, a.id), otherSide(rebuttals, a.id)),
  );
  const rounds = [openings, rebuttals, closings];

  const speeches: SpeechView[] = rounds.flatMap((r, i) =>
    r.turns.filter((t) => t.status === 'ok').map((t) => ({ agentId: t.agentId, position: speechText(t), side: side(t.agentId), phase: OXFORD_PHASES[i]! })),
  );
  const outcome = await judgeMotion(runner, OXFORD_ROUND.closing, motion, sides, speeches);
  runner.checkpoint();
  const ruling: Ruling | null = outcome.status === 'ok' ? rulingOf(outcome.value) : null;
  const error = outcome.status === 'ok' ? null : outcome.error;
  runner.step({ kind: 'ruling', round: OXFORD_ROUND.closing, ruling, error });
  // The verdict is what an Oxford debate is run for: without one the debate failed (exit 5), its speeches kept.
  if (!ruling) noVerdict(runner, error ?? 'no reply');
  const detail = `the judge found ${ruling.winner} the motion, margin ${Math.round(ruling.margin * 100)}/100; decisive: ${ruling.decisive.speaker}`;
  runner.exit('verdict', OXFORD_ROUND.closing, detail);

  const synthesis = await synthesize(runner, rounds, [oxfordSection(motion, sides, ruling)]);
  runner.checkpoint();
  return { exitReason: 'verdict', exitDetail: detail, rounds, synthesis };
}

/**
 * Ends the run as failed unless each side has a speaker with a usable opening: a side that never
 * spoke leaves no debate of the motion, and nothing the judge could weigh or credit on that side.
 */
function requireBothSides(runner: Runner, sides: Sides, openings: TurnRecord[]): void {
  const ok = (id: string) => openings.some((t) => t.agentId === id && t.status === 'ok');
  const silent = SIDES.filter((side) => !sides[side].some(ok));
  if (silent.length === 0) return;
  const who = (side: (typeof SIDES)[number]) => `the ${side} side (${sides[side].join(', ')})`;
  const detail = `${silent.map(who).join(' and ')} gave no usable opening speech, so the motion was not debated`;
  runner.emit({ type: 'debate.exit', reason: 'too_few_answers', round: OXFORD_ROUND.opening, detail, at: runner.now() });
  runner.finish('failed', 'too_few_answers', detail);
  const failed = openings.filter((t) => t.status !== 'ok' && silent.some((side) => sides[side].includes(t.agentId)));
  const gaps = failed.map((t) => `  - ${t.agentId}: ${t.error}`);
  const budget = failed.some((t) => t.error?.startsWith('skipped by the token budget'));
  throw new DebateFailedError('TOO_FEW_ANSWERS', `The debate ${runner.id} failed: ${detail}.\n${gaps.join('\n')}`, {
    hint: budget
      ? `The token budget (${runner.tally.limit?.toLocaleString('en-US')} tokens) does not cover an opening on each side: raise --token-budget (or protocol.tokenBudget), or give a speaker of each side priority: high.`
      : `Check the failures above (model errors, timeouts or invalid JSON), or put a speaker whose model works on ${silent.length === 1 ? 'that side' : 'each side'}; the calls are stored, see \`conclave show ${runner.id}\`.`,
  });
}

/** Ends the run as failed (exit 5) when the judge gave no usable verdict: the speeches, the ruling step and the judge's error are kept. */
function noVerdict(runner: Runner, error: string): never {
  return runner.fail(
    'NO_VERDICT',
    OXFORD_ROUND.closing,
    `the judge gave no usable verdict on the motion: ${error.replace(/\.$/, '')}`,
    `An Oxford debate's result is its verdict. Run it again with another judge model (judge.model); the speeches and the judge's call are stored, see \`conclave show ${runner.id}\`.`,
  );
}
