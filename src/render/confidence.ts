import {
  type ComputedConfidence,
  type PartConfidence,
  computeConfidence,
  delphiConfidence,
  decompositionConfidence,
  oxfordConfidence,
  reviewConfidence,
  tournamentConfidence,
} from '../protocol/confidence.js';
import { familyKey, independenceOf } from '../protocol/stances.js';
import type { ProtocolStep } from '../engine/protocol-events.js';
import type { StoredDebate } from '../store/store.js';
import { familiesOf, figuresOf } from './panel-record.js';
import { kindOf } from './protocols.js';
import { plural } from '../plural.js';
import { delphiOf } from './delphi-lines.js';
import { lastOf } from './oxford.js';

/**
 * The engine's confidence for a stored run (docs/confidence.md): what each protocol recorded,
 * handed to its rule in src/protocol/confidence.ts. Card, `show`, the export, the JSON document,
 * the viewer and the MCP result all read it from here. Null when the run has nothing to rate yet.
 */
export function confidenceOf(d: StoredDebate): ComputedConfidence | null {
  const steps = (d.steps ?? []).map((s) => s.step);
  const threshold = d.preset.protocol.convergenceThreshold;
  const s = d.synthesis?.synthesis ?? null;
  switch (kindOf(d)) {
    case 'decompose': {
      const split = steps.find((x): x is Extract<ProtocolStep, { kind: 'split' }> => x.kind === 'split');
      if (!split) return s ? decompositionConfidence([], true, threshold) : null;
      const parts: PartConfidence[] = split.subQuestions.map((q) => {
        const part = steps.find((x): x is Extract<ProtocolStep, { kind: 'subanswer' }> => x.kind === 'subanswer' && x.index === q.index);
        return { index: q.index, status: part?.status ?? 'not reached', confidence: part?.confidence ?? null, fallback: Boolean(part?.fallback), dependsOn: q.dependsOn };
      });
      // Until the reassembly was tried there is nothing to rate; a tried and failed one is LOW.
      if (!d.synthesis && d.status === 'running') return null;
      return decompositionConfidence(parts, Boolean(s), threshold);
    }
    case 'pipeline': {
      const report = steps.find((x): x is Extract<ProtocolStep, { kind: 'report' }> => x.kind === 'report');
      if (!report && !s) return null;
      const reviews = steps.filter((x): x is Extract<ProtocolStep, { kind: 'observations' }> => x.kind === 'observations' && x.phase === 'review');
      return reviewConfidence({ reviews, report: report ? { ok: report.status === 'ok', findings: report.findings } : null, threshold });
    }
    case 'tournament': {
      if (!s) return null;
      const champion = steps.find((x): x is Extract<ProtocolStep, { kind: 'champion' }> => x.kind === 'champion');
      const matches = steps.filter((x): x is Extract<ProtocolStep, { kind: 'verdict' }> => x.kind === 'verdict');
      return tournamentConfidence({ champion: champion?.agentId ?? null, matches, restsOn: s.restsOn, threshold });
    }
    case 'oxford': {
      if (!s) return null;
      const motion = lastOf(steps, 'motion');
      const ruling = lastOf(steps, 'ruling');
      const closed = d.turns.filter((t) => t.round === 2 && t.status === 'ok').map((t) => t.agentId);
      return oxfordConfidence({ ruling: ruling?.ruling ?? null, sides: motion ?? { for: [], against: [] }, closed, restsOn: s.restsOn, threshold });
    }
    case 'delphi': {
      if (!s) return null;
      const { result, rounds } = delphiOf(steps);
      if (!result) return null;
      const spreads = result.spreads.filter((x): x is number => x !== null);
      // The families of the panelists whose final answers the result reads.
      const answered = new Set((rounds.at(-1)?.estimates ?? []).filter((e) => !result.numeric || e.estimate !== null).map((e) => e.agentId));
      const families = familiesOf(d)?.filter((f) => answered.has(f.agentId)).map((f) => familyKey(f.family)) ?? null;
      return delphiConfidence({
        families,
        numeric: result.numeric,
        summary: result.summary,
        modalShare: result.mode?.share ?? null,
        of: result.of,
        firstSpread: result.spreads[0] ?? null,
        finalSpread: spreads.length ? (result.spreads.at(-1) ?? null) : null,
        threshold,
      });
    }
    default: {
      if (!s) return null;
      const lastRound = Math.max(-1, ...d.turns.map((t) => t.round));
      // A seat whose last turn failed and was filled by the orchestrator's fallback counts, at its own weight.
      const filled = new Set(steps.flatMap((x) => (x.kind === 'fallback' && x.round === lastRound && x.status === 'ok' ? [x.agentId] : [])));
      const okFinal = new Set(d.turns.filter((t) => t.round === lastRound && (t.status === 'ok' || filled.has(t.agentId))).map((t) => t.agentId));
      // The last round's devil's advocate argued by assignment: that turn is not its final position, nor support.
      const advocate = steps.flatMap((x) => (x.kind === 'advocate' && x.round === lastRound ? [x.agentId] : []))[0];
      const usable = d.agents.filter((a) => a.role === 'debater' && okFinal.has(a.id) && a.id !== advocate).map((a) => a.id);
      const scored = d.rounds.filter((r) => r.convergence !== null).sort((a, b) => a.round - b.round).at(-1);
      const judged = scored ? steps.find((x): x is Extract<ProtocolStep, { kind: 'stances' }> => x.kind === 'stances' && x.round === scored.round) : undefined;
      const named = new Set(s.restsOn ?? []);
      const figures = figuresOf(d, usable.filter((id) => named.has(id)));
      return computeConfidence({
        judgeScore: scored?.convergence ?? null,
        threshold,
        restsOn: s.restsOn,
        usable,
        independence: figures ? independenceOf(figures) : null,
        rejectedByVote: rejectedByVote(d),
        rule: kindOf(d) === 'parallel' ? 'parallel' : 'debate',
        advocate: advocate ?? null,
        judgedStances: judged ? judged.stances.map((x) => x.agents) : null,
        fallbacks: usable.filter((id) => filled.has(id) && d.turns.some((t) => t.round === lastRound && t.agentId === id && t.status !== 'ok')),
      });
    }
  }
}

/** Authors of the positions the last vote iteration put in its Reject tier (approved by no cluster). */
function rejectedByVote(d: StoredDebate): string[] {
  const last = d.voting?.iterations.at(-1);
  if (!last) return [];
  const author = new Map(last.artifacts.map((a) => [a.artifactId, a.authorId]));
  return last.tiers.filter((t) => t.tier === 'reject').map((t) => author.get(t.artifactId) ?? t.artifactId);
}

/** `LOW (judge 0.30 < 0.85, rests on 2/3 agents)`, or the protocol's own facts. */
export function confidenceText(c: ComputedConfidence): string {
  return `${c.level.toUpperCase()} (${c.basis.join(', ')})`;
}

/** The lines saying why the level is lower than its figures alone give: the independence cap, a rejected position, a hole. */
export function confidenceNotes(c: ComputedConfidence): string[] {
  return [...(c.capped ? [`MEDIUM at most: ${c.capped}`] : []), ...c.lowered];
}

/** The one line saying why HIGH was lowered for want of independent support, or null. */
export function cappedText(c: ComputedConfidence): string | null {
  return c.capped ? `MEDIUM at most: ${c.capped}` : null;
}

/** Whose final positions the synthesis rests on, by id. */
export function restsOnText(c: ComputedConfidence): string | null {
  return c.restsOn.length > 0 ? `final positions of ${c.restsOn.join(', ')}` : null;
}

/** The synthesizer's own statement, labelled as the model's. */
export function modelConfidenceText(level: string, converged: number): string {
  return `the synthesizer's own statement: ${level}, ${plural(converged, 'agent')} converged`;
}
