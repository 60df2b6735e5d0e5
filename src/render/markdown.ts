import type { StoredDebate } from '../store/store.js';
import { confidenceNotes, confidenceOf, confidenceText, modelConfidenceText } from './confidence.js';
import { panelMarkdown } from './panel.js';
import { markdownDeep } from './inert.js';
import { withoutCallBodies } from './panel-record.js';
import { exitTextBeside } from './exit.js';
import { adviceLine, adviceOf, kindOf, PROTOCOL_LABEL, protocolMarkdown, roundTitle } from './protocols.js';
import { sideTag } from './oxford.js';
import { qualityLabel, qualityMarkdown, ratingOf } from './quality.js';
import { constraintMarkdown } from './constraints.js';
import { tensionMarkdown } from './tensions.js';
import { materialMarkdown } from './material.js';
import { votingMarkdown } from './voting.js';
import { callPlaceText } from './place.js';
import { apiName, plannedHostText, servedBy, synthesizerUsed } from './backends.js';
import type { PlannedHost } from '../schedule/plan.js';
import { formatNumber } from '../plural.js';

/**
 * The whole debate as a Markdown document: card first, then every round's turns and scores.
 * Every recorded string is escaped first, so no reply can bring HTML, links or table breaks.
 */
export function renderMarkdown(stored: StoredDebate): string {
  const d = markdownDeep(withoutCallBodies(stored));
  const out: string[] = [];
  const why = exitTextBeside(d.status, d.exitReason);
  out.push(`# ${d.question}`, '');
  out.push(
    ...(d.preset.constraints ?? []).map((c) => `- Constraint: ${c}`),
    `- Debate: \`${d.id}\``,
    `- Preset: ${d.presetName} (\`${d.presetHash.slice(0, 12)}\`), protocol: ${PROTOCOL_LABEL[kindOf(d)]}`,
    ...(adviceOf(d) ? [`- Protocol chosen by the advisor: ${adviceLine(adviceOf(d)!)}`] : []),
    `- Status: ${d.status}${why === null ? '' : `, ${why}`}`,
    `- Started: ${new Date(d.createdAt).toISOString()}`,
    ...(d.resumptions ?? []).map(
      (r) =>
        `- Resumed: ${new Date(r.at).toISOString()} on ${r.host}, ${r.fromRound < 0 ? 'from the start' : `after round ${r.fromRound}`} (calls 1–${r.callsBefore} were recorded before)${reusedText(r.reused ?? [])}`,
    ),
    `- Panel: ${d.agents
      .filter((a) => a.role === 'debater')
      .map((a) => `${a.id} (\`${a.model}\`)`)
      .join(', ')}`,
    `- Judge: \`${d.preset.judge.model}\`, synthesizer: \`${synthesizerUsed(d)}\`${synthesizerUsed(d) !== (d.preset.synthesizer.model ?? '') ? ` (the preset names \`${d.preset.synthesizer.model ?? ''}\`)` : ''}`,
    '',
  );
  const s = d.synthesis?.synthesis;
  const computed = confidenceOf(d);
  const confidence = computed ? [`**Confidence:** ${confidenceText(computed)}`, '', ...confidenceNotes(computed).flatMap((n) => [`_${n}_`, ''])] : [];
  // A pipeline's result is its review report, written by protocolMarkdown; its confidence comes first.
  if (kindOf(d) === 'pipeline') out.push(...confidence);
  else {
    out.push('## Synthesis', '');
    if (s) {
      out.push(`**Recommendation.** ${s.recommendation}`, '');
      if (s.triggersToRevisit.length) out.push('**Triggers to revisit**', '', ...s.triggersToRevisit.map((t) => `- ${t}`), '');
      out.push(...confidence);
      out.push(`_${modelConfidenceText(s.confidence.level, s.confidence.converged)}_`, '');
      for (const m of s.minorityPositions) {
        out.push(`**Minority position (${m.agent}, round ${m.round}).** ${m.argument}`, '', `> Why it still matters: ${m.whyItMatters}`, '');
      }
      if (s.failedAgents.length) out.push('**Agents without a final answer:** ' + s.failedAgents.map((f) => `${f.agent} (${f.reason})`).join(', '), '');
    } else {
      out.push(`No synthesis: ${d.synthesis?.error ?? d.error ?? 'the debate did not reach synthesis'}.`, '', ...confidence);
      if (d.status === 'unsynthesized') out.push(`Every round ran; the final positions are under the last round below. Finish it with \`conclave synthesize ${d.id}\`.`, '');
    }
  }
  out.push(...panelMarkdown(d));
  out.push(...materialMarkdown(d));
  out.push(...protocolMarkdown(d));
  out.push(...constraintMarkdown(d));
  out.push(...tensionMarkdown(d));
  const rating = ratingOf(d);
  const rounds = [...new Set(d.turns.map((t) => t.round))].sort((a, b) => a - b);
  const steps = (d.steps ?? []).map((s) => s.step);
  for (const round of rounds) {
    out.push(`## ${(roundTitle(kindOf(d), round) ?? `Round ${round}`).replace(' · ', ': ')}`, '');
    for (const t of d.turns.filter((x) => x.round === round)) {
      const q = qualityLabel(rating(t.round === 0 ? 'opening' : 'critique', t.round, t.agentId));
      out.push(`### ${t.agentId}${sideTag(steps, t.agentId)} (\`${t.model}\`)${t.confidence == null ? '' : `, confidence ${t.confidence.toFixed(2)}`}${q ? `, ${q}` : ''}`, '');
      if (t.status !== 'ok') {
        out.push(`_No usable answer: ${t.error ?? t.status}_`, '');
        continue;
      }
      if (t.opening) out.push(t.opening.position, '', `_Reasoning:_ ${t.opening.reasoning}`, '');
      if (t.critique) {
        for (const a of t.critique.agreements) out.push(`- agrees with **${a.with}** on ${a.on}`);
        for (const x of t.critique.disagreements) out.push(`- disagrees with **${x.with}** on ${x.on}: ${x.reason}`);
        if (t.critique.agreements.length || t.critique.disagreements.length) out.push('');
        out.push(`**${kindOf(d) === 'oxford' ? 'Speech' : 'Updated position'}.** ${t.critique.updatedPosition}`, '');
      }
    }
    const j = d.rounds.find((r) => r.round === round);
    if (j?.score && j.convergence !== null) {
      out.push(
        `**Judge:** convergence ${j.convergence.toFixed(2)} (recommendation ${j.score.recommendation.toFixed(2)}, facts ${j.score.facts.toFixed(2)}, caveats ${j.score.caveats.toFixed(2)}). ${j.score.rationale}`,
        '',
      );
    } else if (j) {
      out.push(`**Judge:** no score (${j.error}).`, '');
    }
  }
  const plan = d.plan as
    | { hosts: PlannedHost[]; models: { model: string; numCtx: number; vramBytes: number; slots: number; hosts: string[] }[]; groups: string[][]; warnings: string[] }
    | null;
  if (plan?.models) {
    out.push('## Schedule', '');
    for (const h of plan.hosts) out.push(`- Host ${h.url}: ${plannedHostText(h)}`);
    const served = servedBy(d.calls);
    if (served.length > 0) out.push(`- Calls served: ${served.map((s) => `${s.host} (${apiName(s.api)}) ${s.calls}`).join(', ')}`);
    out.push('', '| model | num_ctx | VRAM need | calls in flight | hosts |', '|---|---|---|---|---|');
    for (const m of plan.models) out.push(`| \`${m.model}\` | ${m.numCtx} | ${(m.vramBytes / 1e9).toFixed(1)} GB | ${m.slots} | ${m.hosts.join(', ')} |`);
    out.push('', `Panel groups per round: ${plan.groups.map((g) => g.map((m) => `\`${m}\``).join(' + ')).join(', then ')}`, '');
    for (const w of plan.warnings) out.push(`- warning: ${w}`);
    if (plan.warnings.length) out.push('');
  }
  out.push(...votingMarkdown(d));
  out.push(...qualityMarkdown(d));
  const failedCalls = d.calls.filter((c) => c.status !== 'ok');
  if (failedCalls.length) {
    out.push('## Failed or repaired calls', '');
    for (const c of failedCalls) out.push(`- ${callPlaceText(c.stage, c.round)}, ${c.agentId} (attempt ${c.attempt}): ${c.status}: ${c.error ?? c.validationError}`);
    out.push('');
  }
  const normalized = d.calls.filter((c) => c.normalized?.length);
  if (normalized.length) {
    out.push('## Replies the engine normalised', '');
    for (const c of normalized) out.push(`- ${callPlaceText(c.stage, c.round)}, ${c.agentId}: ${c.normalized!.join('; ')}`);
    out.push('');
  }
  const thought = d.calls.filter((c) => c.thinking);
  if (thought.length) {
    out.push('## Thinking', '', 'What each thinking model wrote before its reply, folded; the card never quotes it.', '');
    for (const c of thought) {
      out.push(`<details><summary>${c.agentId}, ${c.stage} round ${c.round}, attempt ${c.attempt}: ${formatNumber(c.thinkingTokens ?? 0)} tokens of thinking${c.think === undefined ? '' : ` (think: ${String(c.think)})`}</summary>`, '', c.thinking!, '', '</details>', '');
    }
  }
  const attempts = d.synthesisAttempts ?? [];
  if (attempts.length > 1) {
    out.push('## Synthesis attempts', '');
    for (const a of attempts) out.push(`- ${a.attempt}. \`${a.model}\` at ${new Date(a.at).toISOString()}: ${a.status}${a.error ? ` (${a.error})` : ''}`);
    out.push('');
  }
  return out.join('\n');
}

/** The turns a resumption read from calls finished before it, as a clause of its line. */
function reusedText(reused: { round: number; agentId: string; call: number }[]): string {
  if (reused.length === 0) return '';
  return `; reused without asking again: ${reused.map((t) => `${t.agentId} in round ${t.round} (call ${t.call})`).join(', ')}`;
}
