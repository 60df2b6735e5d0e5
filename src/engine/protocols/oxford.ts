import { assignSides, frameMotion, OXFORD_PHASES, OXFORD_ROUND, oxfordSection, type Ruling, rulingOf, sideOf, speechText, type SpeechView } from '../../protocol/oxford.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import type { TurnRecord } from '../events.js';
import type { ProtocolOutcome, RecordedCalls, Runner } from '../runner.js';
import type { Protocol } from './types.js';
import { requireAnswers } from '../primitives/fan-out.js';
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
  requireAnswers(runner, openings.turns, 0);
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
  if (error) runner.warn(`the judge gave no usable verdict (${error}); the synthesis sets out both sides`);
  runner.step({ kind: 'ruling', round: OXFORD_ROUND.closing, ruling, error });
  const detail = ruling ? `the judge found ${ruling.winner} the motion, margin ${Math.round(ruling.margin * 100)}/100; decisive: ${ruling.decisive.speaker}` : `the judge gave no usable verdict: ${error}`;
  runner.exit('verdict', OXFORD_ROUND.closing, detail);

  const synthesis = await synthesize(runner, rounds, [oxfordSection(motion, sides, ruling)]);
  runner.checkpoint();
  return { exitReason: 'verdict', exitDetail: detail, rounds, synthesis };
}
