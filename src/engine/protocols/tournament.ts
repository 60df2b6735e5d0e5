import type { AgentSpec } from '../../config/preset-schema.js';
import type { TranscriptRound } from '../../protocol/prompts.js';
import { critiqueSummary, pairBracket, seedEntrants, tournamentSection, type Pairing } from '../../protocol/tournament.js';
import type { TurnRecord } from '../events.js';
import type { ProtocolStep } from '../protocol-events.js';
import type { ProtocolOutcome, Runner } from '../runner.js';
import type { Protocol } from './types.js';
import { runStages } from '../primitives/optional-stages.js';
import { TENSION_STAGE } from '../stages/tensions.js';
import { critiqueTurn } from '../primitives/critique-round.js';
import { answerAll, requireAnswers } from '../primitives/fan-out.js';
import { synthesize } from '../primitives/synthesize.js';
import { judgeMatch } from '../primitives/verdict.js';

type Verdict = Extract<ProtocolStep, { kind: 'verdict' }>;

/**
 * Tournament elimination: every agent answers alone (round 0). The agents with a usable
 * answer are seeded by their confidence and paired, top seed against bottom, with a bye for
 * the top seed when the count is odd. In a match the two critique each other once, then the
 * judge names the winner. Losers are never called again. The matches of one bracket round run
 * together within the slots. The champion's final answer is the result; the synthesizer
 * writes the card from the final, keeping the runner-up's view as dissent. When the preset maps
 * tensions, the clashes between the round-0 answers are mapped before the bracket, while they are
 * still independent, and the synthesizer reads the map with the final.
 * Calls for n agents: n answers, the tension map (docs/tensions.md), 2(n − 1) critiques, n − 1 verdicts, 1 synthesis.
 */
export const tournament: Protocol = {
  kind: 'tournament',
  shape: (preset, stages) => ({
    support: [preset.judge.model, preset.synthesizer.model ?? ''],
    synthesisModels: [preset.synthesizer.model ?? ''],
    usesJudge: true,
    // The tension map alone: a vote has no final positions to put to it.
    stages: stages.filter((s) => s.name === TENSION_STAGE),
  }),
  run: runTournament,
};

async function runTournament(runner: Runner, from: TranscriptRound[]): Promise<ProtocolOutcome> {
  const { preset } = runner;
  const byId = new Map(preset.agents.map((a) => [a.id, a]));
  // Stored answers are reused; a bracket starts again from them (its seeding depends on round 0 alone).
  const rounds: TranscriptRound[] = from.slice(0, 1);

  let opening = rounds[0];
  if (!opening) {
    runner.startRound(0);
    const turns = await answerAll(runner, preset.agents, 0, [preset.judge.model]);
    runner.checkpoint();
    opening = { round: 0, turns, judgement: null };
    rounds.push(opening);
  }
  const usable = requireAnswers(runner, opening.turns, 0);
  // The clashes of the independent answers, before any match makes one side read the other.
  const mapped = await runStages(runner, [opening]);
  runner.checkpoint();

  // Each agent's latest usable turn: what its opponent reads and what the judge weighs.
  const latest = new Map<string, TurnRecord>(usable.map((t) => [t.agentId, t]));
  const seeding = seedEntrants(usable.map((t) => ({ agentId: t.agentId, confidence: t.confidence ?? 0 })));
  const seedOf = (id: string): number => seeding.indexOf(id);
  const verdicts: Verdict[] = [];
  let alive = seeding;
  let runnerUp: string | null = null;
  let round = 0;

  while (alive.length > 1) {
    runner.checkpoint();
    round += 1;
    runner.startRound(round);
    const pairings = pairBracket(alive);
    runner.step({ kind: 'bracket', round, seeding: alive, pairings });
    const results = await Promise.all(pairings.map((p, match) => playMatch(runner, round, match, p, byId, latest)));
    runner.checkpoint();
    const turns = results.flatMap((r) => r.turns);
    rounds.push({ round, turns, judgement: null });
    for (const r of results) {
      if (r.verdict) {
        verdicts.push(r.verdict);
        runner.step(r.verdict);
      }
    }
    const winners = results.map((r) => r.advances);
    if (winners.length === 1) {
      const final = results[0]!;
      runnerUp = final.verdict ? (final.verdict.winner === final.verdict.a ? final.verdict.b : final.verdict.a) : null;
    }
    alive = winners.sort((x, y) => seedOf(x) - seedOf(y));
  }

  const champion = alive[0]!;
  const position = latest.get(champion)?.position ?? null;
  runner.step({ kind: 'champion', agentId: champion, runnerUp, position });
  const detail = `${champion} won ${verdicts.filter((v) => v.winner === champion).length} match${verdicts.filter((v) => v.winner === champion).length === 1 ? '' : 'es'}${runnerUp ? `; runner-up ${runnerUp}` : ''}`;
  runner.exit('champion', round, detail);

  // The card is written from the final: the champion's and the runner-up's last turns. The agents
  // without a usable round-0 answer never entered the bracket: their failed turns go with the final,
  // so the synthesis names them as failed, with their reasons. Eliminated agents are not failed.
  const finalists = [champion, ...(runnerUp ? [runnerUp] : [])];
  const finalTurns = finalists.map((id) => latest.get(id)).filter((t): t is TurnRecord => t !== undefined);
  const unseeded = opening.turns.filter((t) => t.status !== 'ok');
  const panel = [...finalists, ...unseeded.map((t) => t.agentId)];
  const synthesis = await synthesize(runner, [{ round, turns: [...finalTurns, ...unseeded], judgement: null }], [tournamentSection(champion, runnerUp, verdicts), ...mapped], panel);
  runner.checkpoint();
  return { exitReason: 'champion', exitDetail: detail, rounds, synthesis };
}

interface MatchResult {
  advances: string;
  turns: TurnRecord[];
  verdict: Verdict | null;
}

/** One match: the two critique each other once, at the same time; then the judge decides. */
async function playMatch(
  runner: Runner,
  round: number,
  match: number,
  pairing: Pairing,
  byId: Map<string, AgentSpec>,
  latest: Map<string, TurnRecord>,
): Promise<MatchResult> {
  const { a, b } = pairing;
  if (b === null) return { advances: a, turns: [], verdict: null };
  const before = { a: latest.get(a)!, b: latest.get(b)! };
  const [turnA, turnB] = await Promise.all([
    critiqueTurn(runner, byId.get(a)!, round, before.a, [before.b]),
    critiqueTurn(runner, byId.get(b)!, round, before.b, [before.a]),
  ]);
  for (const turn of [turnA, turnB]) {
    runner.emit({ type: 'turn.finished', turn, at: runner.now() });
    if (turn.status === 'ok') latest.set(turn.agentId, turn);
  }
  const base = { kind: 'verdict' as const, round, match, a, b };
  const turns = [turnA, turnB];
  // Pairings put the higher seed first: it advances when the match cannot be judged.
  if (turnA.status !== 'ok' || turnB.status !== 'ok') {
    const winner = turnA.status === 'ok' ? a : turnB.status === 'ok' ? b : a;
    const loser = winner === a ? b : a;
    const why = turnA.status !== 'ok' && turnB.status !== 'ok' ? `neither side gave a usable critique; ${a} advances as the higher seed` : `${loser} gave no usable critique`;
    return { advances: winner, turns, verdict: { ...base, winner, reasons: [why], decidedBy: turnA.status === turnB.status ? 'fallback' : 'walkover', error: (winner === a ? turnB : turnA).error } };
  }
  const side = (t: TurnRecord) => ({
    agentId: t.agentId,
    position: t.position ?? '',
    critique: critiqueSummary(t.critique?.agreements ?? [], t.critique?.disagreements ?? []),
  });
  const outcome = await judgeMatch(runner, round, [side(turnA), side(turnB)]);
  if (outcome.status === 'ok') {
    return { advances: outcome.value.winner, turns, verdict: { ...base, winner: outcome.value.winner, reasons: outcome.value.reasons, decidedBy: 'judged', error: null } };
  }
  runner.warn(`match ${a} vs ${b}, round ${round}: no verdict (${outcome.error}); ${a} advances as the higher seed`);
  return { advances: a, turns, verdict: { ...base, winner: a, reasons: [`the judge gave no verdict; ${a} advances as the higher seed`], decidedBy: 'fallback', error: outcome.error } };
}
