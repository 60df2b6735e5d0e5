import type { ProtocolKind } from '../config/preset-schema.js';
import type { DebateEvent } from '../engine/events.js';
import { type ProtocolStep, lastStep } from '../engine/protocol-events.js';
import type { StoredDebate } from '../store/store.js';
import type { Finding, Observation } from '../protocol/pipeline.js';
import { BLOCKING_CONFIDENCE, blockingFirst, PHASE_ROUND } from '../protocol/phases.js';
import type { Paint } from './style.js';
import { stanceStepLines } from './stance-lines.js';
import { readSteps } from './panel-record.js';
import { formatNumber, plural } from '../plural.js';
import { OXFORD_TITLES, oxfordCardLines, oxfordMarkdown, oxfordStepLines } from './oxford.js';
import { delphiCardLines, delphiMarkdown, delphiOf, delphiRoundText, delphiStepLines, spreadText } from './delphi-lines.js';

/**
 * The renderers for the protocols' own shapes: a tournament's bracket and verdicts, a
 * decomposition's tree of sub-questions, the synthesizer's rotation turn. Live view,
 * card, Markdown and JSON document each call one function here; nothing else in them
 * depends on the protocol.
 */

export function kindOf(d: Pick<StoredDebate, 'preset'>): ProtocolKind {
  // A run resolves `auto` to the advisor's choice before the debate is recorded.
  const kind = d.preset.protocol.kind ?? 'debate';
  return kind === 'auto' ? 'debate' : kind;
}

export const PROTOCOL_LABEL: Record<ProtocolKind, string> = {
  debate: 'debate',
  parallel: 'parallel answers',
  tournament: 'tournament',
  decompose: 'decomposition',
  pipeline: 'review pipeline',
  oxford: 'Oxford debate',
  delphi: 'Delphi',
};

/** The heading of a round in the live view and replays; null hides it (a decomposition's parts report themselves). */
export function roundTitle(kind: ProtocolKind, round: number): string | null {
  if (kind === 'decompose') return round === 0 ? 'Split · the decomposer divides the question' : null;
  if (kind === 'pipeline') return PIPELINE_TITLES[round] ?? null;
  if (kind === 'oxford') return OXFORD_TITLES[round] ?? null;
  if (round === 0) return 'Round 0 · independent answers';
  if (kind === 'tournament') return `Bracket round ${round} · matches`;
  if (kind === 'delphi') return `Round ${round} · anonymous revision`;
  return `Round ${round} · critique`;
}

const PIPELINE_TITLES: Record<number, string> = {
  [PHASE_ROUND.plan]: 'Plan · the lead and the analysts',
  [PHASE_ROUND.review]: 'Review · the reviewers, each with the plan',
  [PHASE_ROUND.final]: 'Final · the filter',
};

type Observed = Extract<ProtocolStep, { kind: 'observations' }>;
type Report = Extract<ProtocolStep, { kind: 'report' }>;
type Downgrade = Extract<ProtocolStep, { kind: 'downgrade' }>;
type Advocate = Extract<ProtocolStep, { kind: 'advocate' }>;

/** Whether anyone moved in the round after an advocate spoke. */
export function advocateEffect(a: Advocate): string {
  if (a.moved === null) return 'no round followed to show an effect';
  return a.moved.length ? `moved after it: ${a.moved.join(', ')}` : 'nobody moved after it';
}

type TrajectoryStep = Extract<ProtocolStep, { kind: 'trajectory' }>;

/** What the trajectory rule chose, against the final majority: `S2 "migrate" (score 31.7; the final majority was S1)`. */
export function trajectoryText(t: TrajectoryStep): string {
  if (t.stance === null) return `no choice (${t.why ?? 'no stances'}); the synthesizer decided from the final round`;
  const against = t.finalMajority === null ? 'no clear final majority' : t.finalMajority === t.stance ? 'also the final majority' : `the final majority was ${t.finalMajority}`;
  return `${t.stance} "${t.summary ?? ''}" (score ${t.score}; ${against})`;
}

function confidenceTag(o: Observation): string {
  const why = o.confidence < BLOCKING_CONFIDENCE ? `blocking below ${BLOCKING_CONFIDENCE}` : 'blocking without evidence';
  return `${o.blocking ? 'BLOCKING' : 'not blocking'}, confidence ${o.confidence}${o.downgraded ? `, downgraded (${why})` : ''}`;
}

function stepLines(step: ProtocolStep, paint: Paint, clip: (s: string) => string): string[] {
  switch (step.kind) {
    case 'synthesizer':
      return [
        `  ${paint('dim', 'synthesizer:')} ${step.model} ${paint('dim', `(rotation turn ${step.turn + 1}, ${step.turn % step.candidates.length + 1} of ${step.candidates.length}: ${step.candidates.join(', ')})`)}`,
      ];
    case 'bracket':
      return [`  ${paint('dim', 'pairings:')} ${step.pairings.map((p) => (p.b === null ? `${p.a} (bye)` : `${p.a} vs ${p.b}`)).join(', ')}`];
    case 'verdict': {
      const loser = step.winner === step.a ? step.b : step.a;
      const how = step.decidedBy === 'judged' ? 'judge' : step.decidedBy;
      return [`  ${paint('bold', how)}: ${paint('green', step.winner)} beats ${loser} ${paint('dim', `· ${clip(step.reasons.join('; '))}`)}`];
    }
    case 'champion':
      return [paint('bold', `\nChampion: ${step.agentId}`) + (step.runnerUp ? paint('dim', ` · runner-up ${step.runnerUp}`) : '')];
    case 'split':
      return [
        ...step.subQuestions.map(
          (s) => `  ${paint('bold', String(s.index))}. ${clip(s.question)} ${paint('dim', `→ ${s.assignee}${s.dependsOn.length ? ` · after ${s.dependsOn.join(', ')}` : ''}`)}`,
        ),
        ...step.notes.map((n) => paint('yellow', `  note: ${n}`)),
      ];
    case 'subanswer':
      if (step.status === 'ok') return [`    ${paint('magenta', `${step.index}. ${step.agentId}`)}${step.fallback ? paint('yellow', ` (fallback: ${step.fallback.failedAgent} gave no usable answer)`) : ''}: ${clip(step.answer ?? '')}`];
      return [paint(step.status === 'skipped' ? 'yellow' : 'red', `    ${step.index}. ${step.agentId}: ${step.reason?.startsWith(step.status) ? step.reason : `${step.status} (${step.reason})`}`)];
    case 'phase':
      return [`  ${paint('dim', 'roles:')} ${step.agents.map((a) => `${a.id} (${a.role})`).join(', ')}`];
    case 'observations': {
      const who = `${step.agentId} (${step.role}${step.role === 'reviewer' ? (step.withPlan ? ', with the plan' : ', no plan') : ''})`;
      // A budget skip's error already starts with "skipped".
      if (step.status !== 'ok') return [paint(step.status === 'skipped' ? 'yellow' : 'red', `  ${who}: ${step.error?.startsWith(step.status) ? step.error : `${step.status} (${step.error})`}`)];
      const blocking = step.observations.filter((o) => o.blocking).length;
      return [
        `  ${paint('magenta', who)}: ${step.observations.length} observation${step.observations.length === 1 ? '' : 's'}, ${blocking} blocking`,
        ...step.observations.map((o) => `    ${paint(o.blocking ? 'red' : 'dim', o.id)} ${paint('dim', `[${confidenceTag(o)}]`)} ${clip(o.text)}`),
        ...step.notes.map((n) => paint('yellow', `    note: ${clip(n)}`)),
      ];
    }
    case 'downgrade':
      // At or above the threshold, the only other reason for a downgrade is missing evidence.
      return [
        paint(
          'yellow',
          step.confidence < step.threshold
            ? `  downgraded: ${step.agentId}/${step.observationId} was blocking at confidence ${step.confidence} (< ${step.threshold}); kept as not blocking`
            : `  downgraded: ${step.agentId}/${step.observationId} was blocking with no evidence; kept as not blocking`,
        ),
      ];
    case 'advice':
      return step.advice
        ? [`  ${paint('dim', 'advisor')} ${step.model} ${paint('dim', step.rule ? 'classified; running' : 'chose')} ${paint('bold', step.chosen)} ${paint('dim', clip(`(${step.rule ?? `${step.advice.depth}, ${step.advice.pattern}`}${step.tokenBudget ? `, budget ${formatNumber(step.tokenBudget)} tokens` : ''}): ${step.advice.reason}`))}`]
        : [paint('yellow', `  advisor ${step.model} gave no usable advice (${clip(step.error ?? 'no reply')}): running ${step.chosen}`)];
    case 'constraints':
      return [
        `  ${paint('dim', 'constraints:')} ${step.constraints.length} merged${step.collisions.length ? `, ${paint('yellow', `${step.collisions.length} collision${step.collisions.length === 1 ? '' : 's'}`)} for the ${step.stage} to resolve` : ', no collision'}`,
        ...step.collisions.map((k) => paint('yellow', `    ${k.id} ${clip(`"${k.subject}": ${k.requires.authors.join(', ')} require${k.requires.authors.length === 1 ? 's' : ''} it, ${k.prohibits.authors.join(', ')} prohibit${k.prohibits.authors.length === 1 ? 's' : ''} it`)}`)),
      ];
    case 'stances':
      return stanceStepLines(step, paint, clip);
    case 'advocate':
      return [`  ${paint('magenta', `advocate ${step.agentId}`)} ${paint('dim', `(round ${step.round}, left out of convergence)`)}: ${clip(step.raised ?? 'no usable turn')} ${paint('dim', `· ${advocateEffect(step)}`)}`];
    case 'trajectory':
      return [`  ${paint('magenta', 'decision by trajectory (Free-MAD):')} ${clip(trajectoryText(step))}`];
    case 'motion':
    case 'ruling':
      return oxfordStepLines(step, paint, clip);
    case 'fallback':
      return [paint('yellow', `  ${clip(fallbackText(step))}`)];
    case 'delphi':
    case 'delphi-result':
      return delphiStepLines(step, paint, clip);
    case 'report':
      if (step.status !== 'ok') return [paint('red', `  ${step.filter}: no report (${step.error})`)];
      return [
        `  ${paint('magenta', step.filter)}: ${step.mode === 'list' ? `${plural(step.findings.length, 'finding')}, ${step.findings.filter((f) => f.blocking).length} blocking` : `wrote ${clip(step.artifact?.title ?? '')}`}`,
      ];
  }
}

/** Lines the live view prints for a protocol step. */
export function protocolLiveView(paint: Paint, columns: number): (event: DebateEvent) => string[] {
  const clip = (s: string): string => oneLine(s, columns - 30);
  return (event) => (event.type === 'protocol.step' ? stepLines(event.step, paint, clip) : []);
}

function stepsOf(d: StoredDebate): ProtocolStep[] {
  return readSteps(d).map((s) => s.step);
}

/** Lines under the card's recommendation: the champion and bracket, or the decomposition, and the synthesizer's turn. */
export function protocolCardLines(d: StoredDebate, paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const steps = stepsOf(d);
  const lines: string[] = [];
  const champion = steps.find((s): s is Extract<ProtocolStep, { kind: 'champion' }> => s.kind === 'champion');
  if (champion) {
    lines.push('', paint('bold', `CHAMPION: ${champion.agentId}${champion.runnerUp ? ` (runner-up ${champion.runnerUp})` : ''}`));
    if (champion.position) lines.push(...wrap(champion.position, width - 2).map((l) => `  ${l}`));
    lines.push('', paint('bold', 'BRACKET'));
    // Round by round, each round's byes after its matches.
    const rows: { round: number; lines: string[] }[] = [];
    for (const v of steps) {
      if (v.kind !== 'verdict') continue;
      const loser = v.winner === v.a ? v.b : v.a;
      rows.push({ round: v.round, lines: wrap(`round ${v.round}: ${v.winner} beat ${loser} (${v.decidedBy}): ${v.reasons.join('; ')}`, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)) });
    }
    for (const b of steps) if (b.kind === 'bracket') for (const p of b.pairings) if (p.b === null) rows.push({ round: b.round, lines: [`  - round ${b.round}: ${p.a} had a bye`] });
    for (const row of rows.sort((x, y) => x.round - y.round)) lines.push(...row.lines);
  }
  const advocates = steps.filter((s): s is Advocate => s.kind === 'advocate').sort((a, b) => a.round - b.round);
  if (advocates.length) {
    lines.push('', paint('bold', "DEVIL'S ADVOCATE (left out of the convergence score)"));
    for (const a of advocates) {
      const text = `round ${a.round}, ${a.agentId}${a.against ? `, against "${a.against}"` : ''}: ${a.raised ?? 'no usable turn'} (${advocateEffect(a)})`;
      lines.push(...wrap(text, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)));
    }
  }
  const fallbacks = fallbacksOf(d);
  if (fallbacks.length) {
    lines.push('', paint('bold', "FALLBACK ANALYSES (by the orchestrator, in the seats whose turn failed; not the agents' own)"));
    for (const f of fallbacks) lines.push(...wrap(fallbackText(f), width - 4).map((l, i) => paint('yellow', i === 0 ? `  - ${l}` : `    ${l}`)));
  }
  const trajectory = steps.find((s): s is TrajectoryStep => s.kind === 'trajectory');
  if (trajectory) {
    lines.push('', paint('bold', 'DECISION BY TRAJECTORY (Free-MAD score over all rounds)'));
    lines.push(...wrap(`chosen: ${trajectoryText(trajectory)}`, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)));
    for (const x of trajectory.scores) lines.push(...wrap(`${x.stance} "${x.summary}": ${x.score}`, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)));
  }
  lines.push(...oxfordCardLines(steps, paint, width, wrap));
  lines.push(...delphiCardLines(steps, paint, width, wrap));
  lines.push(...pipelineCardLines(steps, paint, width, wrap));
  const split = steps.find((s): s is Extract<ProtocolStep, { kind: 'split' }> => s.kind === 'split');
  if (split) {
    lines.push('', paint('bold', `DECOMPOSITION (by ${split.decomposer})`));
    for (const s of split.subQuestions) {
      const part = steps.find((p): p is Extract<ProtocolStep, { kind: 'subanswer' }> => p.kind === 'subanswer' && p.index === s.index);
      const state = !part ? 'not reached' : part.status === 'ok' ? answeredBy(part) : `${part.status}: ${part.reason}`;
      lines.push(...wrap(`${s.index}. ${s.question}${s.dependsOn.length ? ` (after ${s.dependsOn.join(', ')})` : ''}: ${state}`, width - 4).map((l, i) => (i === 0 ? `  ${l}` : `     ${l}`)));
    }
  }
  const rotation = steps.find((s): s is Extract<ProtocolStep, { kind: 'synthesizer' }> => s.kind === 'synthesizer');
  if (rotation) {
    lines.push('', paint('dim', `Synthesized by ${rotation.model} (rotation turn ${rotation.turn + 1} over ${rotation.candidates.join(', ')}).`));
    if (rotation.panelAgents.length) {
      lines.push(...wrap(`Note: ${rotation.model} also debated as ${rotation.panelAgents.join(', ')}; a panel model synthesizing tends to favour its own arguments.`, width - 2).map((l) => paint('yellow', l)));
    }
  }
  return lines;
}

/** A pipeline's report on the card: blocking findings first, then the rest, who raised each, the evidence, and the downgrades. */
function pipelineCardLines(steps: ProtocolStep[], paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const report = steps.find((s): s is Report => s.kind === 'report');
  const downgrades = steps.filter((s): s is Downgrade => s.kind === 'downgrade');
  if (!report && !steps.some((s) => s.kind === 'phase')) return [];
  const lines: string[] = [];
  const item = (f: Finding): string[] => [
    ...wrap(`${f.id} [${confidenceTag(f)}] ${f.text}`, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)),
    ...wrap(`raised by ${f.raisedBy.join(', ')}${f.evidence ? `; evidence: ${f.evidence}` : ''}`, width - 6).map((l) => `    ${paint('dim', l)}`),
  ];
  if (report?.status === 'ok') {
    const blocking = report.findings.filter((f) => f.blocking);
    const rest = report.findings.filter((f) => !f.blocking);
    const what = report.mode === 'list' ? 'FINDINGS' : 'OBSERVATIONS';
    lines.push('', paint('bold', `BLOCKING ${what} (${blocking.length})`));
    lines.push(...(blocking.length ? blocking.flatMap(item) : [`  ${paint('dim', 'none')}`]));
    lines.push('', paint('bold', `OTHER ${what} (${rest.length})`));
    lines.push(...(rest.length ? rest.flatMap(item) : [`  ${paint('dim', 'none')}`]));
  } else {
    lines.push('', paint('red', `No report: ${report?.error ?? 'the filter did not run'}.`));
    for (const s of steps) {
      if (s.kind !== 'observations' || s.status !== 'ok' || s.observations.length === 0) continue;
      lines.push('', paint('bold', `${s.agentId.toUpperCase()} (${s.role})`));
      for (const o of blockingFirst(s.observations)) lines.push(...item({ ...o, raisedBy: [s.agentId], sources: [] }));
    }
  }
  if (downgrades.length) {
    lines.push('', paint('bold', `DOWNGRADED (blocking below confidence ${BLOCKING_CONFIDENCE}, kept as not blocking)`));
    for (const g of downgrades) lines.push(...wrap(`${g.agentId}/${g.observationId} at confidence ${g.confidence}: ${g.text}`, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)));
  }
  const failed = steps.filter((s): s is Observed => s.kind === 'observations' && s.status !== 'ok');
  if (failed.length) {
    lines.push('', paint('bold', 'WITHOUT A USABLE REPLY'));
    for (const f of failed) lines.push(...wrap(`${f.agentId} (${f.role}): ${f.error ?? f.status}`, width - 4).map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)));
  }
  return lines;
}

/** The card's footer: what the run did, in the protocol's terms. */
export function protocolFooter(d: StoredDebate): string {
  const kind = kindOf(d);
  const steps = stepsOf(d);
  const debaters = d.agents.filter((a) => a.role === 'debater').length;
  switch (kind) {
    case 'parallel':
      return `parallel answers from ${plural(debaters, 'agent')}`;
    case 'tournament': {
      const brackets = steps.filter((s): s is Extract<ProtocolStep, { kind: 'bracket' }> => s.kind === 'bracket');
      const rounds = brackets.length;
      // Agents without a usable round-0 answer never entered the bracket: the tournament is of those seeded.
      const seeded = brackets.length ? Math.min(...brackets.map((b) => b.round)) : null;
      const entered = brackets.find((b) => b.round === seeded)?.seeding.length ?? debaters;
      const out = debaters - entered;
      return `tournament of ${entered} agents${out > 0 ? ` (${out} of ${debaters} without a usable round-0 answer)` : ''} · ${rounds} bracket round${rounds === 1 ? '' : 's'}`;
    }
    case 'decompose': {
      const split = steps.find((s): s is Extract<ProtocolStep, { kind: 'split' }> => s.kind === 'split');
      const ok = steps.filter((s) => s.kind === 'subanswer' && s.status === 'ok').length;
      return split ? `decomposition · ${ok} of ${split.subQuestions.length} sub-questions answered` : 'decomposition · no split';
    }
    case 'pipeline': {
      const roles = steps.filter((s): s is Observed => s.kind === 'observations');
      const count = (role: string) => roles.filter((r) => r.role === role).length;
      const report = steps.find((s): s is Report => s.kind === 'report');
      const downgraded = steps.filter((s) => s.kind === 'downgrade').length;
      const outcome = report?.status === 'ok' ? `${report.findings.length} ${report.mode === 'list' ? 'findings' : 'observations'}, ${report.findings.filter((f) => f.blocking).length} blocking` : 'no report';
      return `review pipeline · ${count('lead')} lead, ${count('analyst')} analyst${count('analyst') === 1 ? '' : 's'}, ${count('reviewer')} reviewer${count('reviewer') === 1 ? '' : 's'} · ${outcome} · ${downgraded} downgraded`;
    }
    case 'oxford': {
      const motion = steps.find((s) => s.kind === 'motion');
      const sides = motion?.kind === 'motion' ? `${motion.for.length} for, ${motion.against.length} against` : plural(debaters, 'agent');
      return `Oxford debate · ${sides} · openings, rebuttals, closings`;
    }
    case 'delphi': {
      const { rounds } = delphiOf(steps);
      const last = rounds.at(-1);
      return `Delphi · ${plural(Math.max(0, rounds.length - 1), 'anonymous revision round')}${last ? ` · ${delphiRoundText(last)}, ${spreadText(last.numeric, last.spread)}` : ''}`;
    }
    default:
      return `${d.roundsCompleted} critique round${d.roundsCompleted === 1 ? '' : 's'}`;
  }
}

/** Markdown sections for the protocol's shape. */
export function protocolMarkdown(d: StoredDebate): string[] {
  const steps = stepsOf(d);
  const out: string[] = [];
  const rotation = steps.find((s): s is Extract<ProtocolStep, { kind: 'synthesizer' }> => s.kind === 'synthesizer');
  if (rotation) {
    out.push(`_Synthesizer: \`${rotation.model}\`, rotation turn ${rotation.turn + 1} over ${rotation.candidates.map((c) => `\`${c}\``).join(', ')}._`, '');
    if (rotation.panelAgents.length) out.push(`_It also debated as ${rotation.panelAgents.join(', ')}: a panel model synthesizing tends to favour its own arguments._`, '');
  }
  const brackets = steps.filter((s): s is Extract<ProtocolStep, { kind: 'bracket' }> => s.kind === 'bracket');
  if (brackets.length) {
    out.push('## Bracket', '', `Seeding (round-0 confidence): ${brackets[0]!.seeding.join(', ')}`, '');
    for (const b of brackets) {
      out.push(`### Bracket round ${b.round}`, '');
      for (const p of b.pairings) {
        if (p.b === null) {
          out.push(`- ${p.a}: bye`);
          continue;
        }
        const v = steps.find((s): s is Extract<ProtocolStep, { kind: 'verdict' }> => s.kind === 'verdict' && s.round === b.round && s.a === p.a && s.b === p.b);
        out.push(`- ${p.a} vs ${p.b}: ${v ? `**${v.winner}** wins (${v.decidedBy})` : 'not played'}`);
        for (const r of v?.reasons ?? []) out.push(`  - ${r}`);
      }
      out.push('');
    }
    const champion = steps.find((s): s is Extract<ProtocolStep, { kind: 'champion' }> => s.kind === 'champion');
    if (champion) out.push(`**Champion:** ${champion.agentId}${champion.runnerUp ? `, runner-up ${champion.runnerUp}` : ''}.`, '', champion.position ?? '', '');
  }
  const advocates = steps.filter((s): s is Advocate => s.kind === 'advocate').sort((a, b) => a.round - b.round);
  if (advocates.length) {
    out.push("## Devil's advocate", '', "_Each advocate's turn is left out of the convergence score._", '');
    for (const a of advocates) out.push(`- Round ${a.round}, ${a.agentId}${a.against ? `, against "${a.against}"` : ''}: ${a.raised ?? 'no usable turn'} (${advocateEffect(a)})`);
    out.push('');
  }
  const fallbacks = fallbacksOf(d);
  if (fallbacks.length) {
    out.push('## Fallback analyses', '', "_Written by the orchestrator in the seats whose turn failed; not the agents' own. Peers, the judge and the synthesizer read them marked as such._", '');
    for (const f of fallbacks) out.push(`- ${fallbackText(f)}`);
    out.push('');
  }
  const trajectory = steps.find((s): s is TrajectoryStep => s.kind === 'trajectory');
  if (trajectory) {
    out.push('## Decision by trajectory', '', '_The Free-MAD score over all rounds chose the position the synthesis writes up._', '', `- Chosen: ${trajectoryText(trajectory)}`);
    for (const x of trajectory.scores) out.push(`- ${x.stance} "${x.summary}": ${x.score}`);
    out.push('');
  }
  out.push(...oxfordMarkdown(steps));
  out.push(...delphiMarkdown(steps));
  out.push(...pipelineMarkdown(steps));
  const split = steps.find((s): s is Extract<ProtocolStep, { kind: 'split' }> => s.kind === 'split');
  if (split) {
    out.push(`## Decomposition by ${split.decomposer}`, '');
    for (const n of split.notes) out.push(`- note: ${n}`);
    if (split.notes.length) out.push('');
    for (const s of split.subQuestions) {
      out.push(`### ${s.index}. ${s.question}`, '', `Assigned to ${s.assignee}${s.dependsOn.length ? `; depends on ${s.dependsOn.join(', ')}` : ''}.`, '');
      const part = steps.find((p): p is Extract<ProtocolStep, { kind: 'subanswer' }> => p.kind === 'subanswer' && p.index === s.index);
      if (!part) out.push('_Not reached._', '');
      else if (part.status === 'ok') {
        if (part.fallback) out.push(`_${answeredBy(part)}._`, '');
        out.push(`${part.answer}${part.confidence === null ? '' : ` (confidence ${part.confidence.toFixed(2)})`}`, '');
      }
      else out.push(`_${part.status}: ${part.reason}_`, '');
    }
  }
  return out;
}

/** A pipeline's report and phases in Markdown (the steps come escaped). */
function pipelineMarkdown(steps: ProtocolStep[]): string[] {
  if (!steps.some((s) => s.kind === 'phase')) return [];
  const out: string[] = [];
  const report = steps.find((s): s is Report => s.kind === 'report');
  const item = (f: Finding): string[] => [`- **${f.id}** (${confidenceTag(f)}) ${f.text}`, `  - raised by ${f.raisedBy.join(', ')}${f.evidence ? `; evidence: ${f.evidence}` : ''}`];
  out.push(`## Review report`, '');
  if (report?.status === 'ok') {
    out.push(`_Written by ${report.filter} (\`${report.model}\`), ${report.mode === 'list' ? 'findings reduced to one list' : 'one document'}._`, '');
    if (report.summary) out.push(`**Verdict.** ${report.summary}`, '');
    if (report.artifact) out.push(`### ${report.artifact.title}`, '', report.artifact.document || '_Empty document._', '');
    const blocking = report.findings.filter((f) => f.blocking);
    const rest = report.findings.filter((f) => !f.blocking);
    out.push('### Blocking', '', ...(blocking.length ? blocking.flatMap(item) : ['_None._']), '');
    out.push('### Not blocking', '', ...(rest.length ? rest.flatMap(item) : ['_None._']), '');
    for (const n of report.notes) out.push(`- note: ${n}`);
    if (report.notes.length) out.push('');
  } else {
    out.push(`_No report: ${report?.error ?? 'the filter did not run'}._`, '');
  }
  const downgrades = steps.filter((s): s is Downgrade => s.kind === 'downgrade');
  if (downgrades.length) {
    out.push(`### Downgraded (blocking below confidence ${BLOCKING_CONFIDENCE}, kept as not blocking)`, '');
    for (const g of downgrades) out.push(`- ${g.agentId}/${g.observationId} at confidence ${g.confidence}: ${g.text}`);
    out.push('');
  }
  for (const phase of ['plan', 'review'] as const) {
    // The lead first, then the others in the order they finished.
    const observed = steps.filter((s): s is Observed => s.kind === 'observations' && s.phase === phase).sort((a, b) => Number(b.role === 'lead') - Number(a.role === 'lead'));
    if (!observed.length) continue;
    out.push(`## ${PIPELINE_TITLES[PHASE_ROUND[phase]]!.replace(' · ', ': ')}`, '');
    for (const s of observed) {
      out.push(`### ${s.agentId} (${s.role}${s.role === 'reviewer' ? (s.withPlan ? ', with the plan' : ', no plan') : ''})`, '');
      if (s.status !== 'ok') {
        out.push(`_No usable reply: ${s.error ?? s.status}_`, '');
        continue;
      }
      if (s.summary) out.push(s.summary, '');
      for (const o of s.observations) out.push(...item({ ...o, raisedBy: [s.agentId], sources: [] }));
      for (const n of s.notes) out.push(`- note: ${n}`);
      out.push('');
    }
  }
  return out;
}

/** The `protocol` block of the JSON document: its kind and every recorded step, in order. */
export function protocolDocument(d: StoredDebate): Record<string, unknown> {
  const steps = stepsOf(d);
  const report = steps.find((s): s is Report => s.kind === 'report');
  if (!report) return { kind: kindOf(d), steps };
  // A pipeline's report, grouped as the card shows it: blocking first, then the rest, and the downgrades.
  const { kind: _, findings, ...rest } = report;
  return {
    kind: kindOf(d),
    report: { ...rest, blocking: findings.filter((f) => f.blocking), other: findings.filter((f) => !f.blocking), downgrades: steps.filter((s) => s.kind === 'downgrade') },
    steps,
  };
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const limit = Math.max(30, max);
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

type AdviceStep = Extract<ProtocolStep, { kind: 'advice' }>;

/** The advisor's choice, when the preset left the protocol to it (`protocol.kind: auto`). */
export function adviceOf(d: Pick<StoredDebate, 'steps'>): AdviceStep | null {
  return lastStep(d.steps, 'advice');
}

/** The advice in one sentence: what was chosen, by which model, and why. */
export function adviceLine(a: AdviceStep): string {
  const budget = a.tokenBudget ? `, budget ${formatNumber(a.tokenBudget)} tokens` : '';
  if (!a.advice) return `${a.model} gave no usable advice (${a.error ?? 'no reply'}), so it ran as ${a.chosen}${budget}.`;
  const depth = a.chosen === 'debate' ? `, at most ${a.maxRounds} critique round${a.maxRounds === 1 ? '' : 's'}` : '';
  const domains = a.advice.domains.length ? `; domains: ${a.advice.domains.join(', ')}` : '';
  if (a.rule) {
    const mode = a.advice.mode ? `, ${a.advice.mode}` : '';
    return `${a.model} classified it (${a.advice.depth}, ${a.advice.pattern}${mode}; parts: ${a.advice.parts}${domains}): ${a.advice.reason} Rule: ${a.rule}; ran ${a.chosen} among ${a.choices.join(', ')}${depth}${budget}.`;
  }
  return `${a.model} chose ${a.chosen} among ${a.choices.join(', ')} (${a.advice.depth}, ${a.advice.pattern}${depth}${budget}; parts: ${a.advice.parts}${domains}): ${a.advice.reason}`;
}

type FallbackStep = Extract<ProtocolStep, { kind: 'fallback' }>;

/** The seats the orchestrator filled after their agent's turn failed, in round order. */
export function fallbacksOf(d: Pick<StoredDebate, 'steps'>): FallbackStep[] {
  return (d.steps ?? []).map((s) => s.step).filter((s): s is FallbackStep => s.kind === 'fallback').sort((a, b) => a.round - b.round);
}

/** `round 1, beta failed (timeout): fallback analysis by gemma2:9b, not beta's own (confidence 0.60): …` */
export function fallbackText(f: FallbackStep): string {
  const where = `round ${f.round}, ${f.agentId} failed (${f.failure})`;
  if (f.status !== 'ok') return `${where}: the fallback by ${f.model} failed too (${f.error}); the seat is empty`;
  return `${where}: fallback analysis by ${f.model}, not ${f.agentId}'s own${f.confidence === null ? '' : ` (confidence ${f.confidence.toFixed(2)})`}: ${f.position ?? ''}`;
}

/** Who answered a usable sub-question: its assignee, or the decomposer's fallback after the assignee failed. */
export function answeredBy(part: Extract<ProtocolStep, { kind: 'subanswer' }>): string {
  return part.fallback ? `fallback analysis by ${part.agentId}, after ${part.fallback.failedAgent} gave no usable answer (${part.fallback.failure})` : `answered by ${part.agentId}`;
}
