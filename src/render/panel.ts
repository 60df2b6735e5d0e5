import { type AgentFamily, type ConformityFigures, type RoundStances, type StanceMove, familyKey } from '../protocol/stances.js';
import type { StoredDebate } from '../store/store.js';
import { confidenceOf } from './confidence.js';
import { familiesOf, figuresOf, stanceRounds } from './panel-record.js';
import type { Paint } from './style.js';
import { MOVE_WORD } from './stance-lines.js';
import { inertLine } from './inert.js';

/**
 * The panel's independence and conformity, as every view shows it: the model families sealed
 * with the plan, the judge's stances of each round as recorded, and the figures the engine
 * derives from them (src/protocol/stances.ts, docs/confidence.md).
 */
export interface PanelView {
  families: AgentFamily[] | null;
  rounds: RoundStances[];
  figures: ConformityFigures | null;
}

export function panelOf(d: StoredDebate): PanelView | null {
  const families = familiesOf(d);
  const rounds = stanceRounds(d);
  if (!families && rounds.length === 0) return null;
  const restsOn = confidenceOf(d)?.restsOn ?? [];
  return { families, rounds, figures: figuresOf(d, restsOn) };
}


function familyName(f: AgentFamily): string {
  return f.family === null ? 'unknown' : f.family;
}

/** `llama ×2 (alpha, beta) · qwen2 (gamma)`: each family by lineage, with its agents. */
export function familiesText(families: readonly AgentFamily[]): string {
  const groups = new Map<string, string[]>();
  for (const f of families) {
    const key = familyKey(f.family) ?? 'unknown';
    groups.set(key, [...(groups.get(key) ?? []), f.agentId]);
  }
  return [...groups].map(([k, ids]) => `${k}${ids.length > 1 ? ` ×${ids.length}` : ''} (${ids.join(', ')})`).join(' · ');
}

function stancesCountText(f: ConformityFigures): string {
  if (f.stancesAtStart === null) return 'none recorded (this run has no judge stances to measure conformity by)';
  const eff = f.effectivePositions === null ? '' : ` (effective ${f.effectivePositions.toFixed(2)})`;
  return `${f.stancesAtStart} at round 0${eff} → ${f.stancesAtEnd} at the end`;
}

function joinsText(f: ConformityFigures): string {
  if (f.joins.length === 0) return f.startMajority === null && f.stancesAtStart !== null ? 'no single majority at round 0' : 'nobody joined the majority';
  const joins = f.joins.map((j) => `${j.agentId} (round ${j.round}${j.reasoned === false ? ', no reason stated' : j.reasoned ? ', with a reason' : ''})`).join(', ');
  const adoption = f.majorityAdoption === null ? '' : `; adoption ${f.joinedMajority.length}/${f.outsideMajority.length}`;
  return `${joins}${adoption}`;
}

/** The card's PANEL block. */
export function panelCardLines(d: StoredDebate, paint: Paint, width: number, wrap: (text: string, width: number) => string[]): string[] {
  const p = panelOf(d);
  if (!p) return [];
  // Families, stance ids and agents come from servers, models and records: a newline in one must not start a line of the block.
  const line = (label: string, text: string): string[] => wrap(`${label}: ${inertLine(text)}`, width - 2).map((l) => `  ${l}`);
  const lines = ['', paint('bold', 'PANEL')];
  if (p.families) lines.push(...line('families', familiesText(p.families)));
  if (p.figures) {
    lines.push(...line('stances', stancesCountText(p.figures)));
    // With no stances there is no majority to join: saying "nobody joined" would read as a finding.
    if (p.figures.stancesAtStart !== null) lines.push(...line('joined the majority', joinsText(p.figures)));
  }
  const trail = stanceTrails(p.rounds, p.families?.map((f) => f.agentId) ?? []);
  if (trail.length) lines.push(...line('by round', trail.map((t) => `${t.agentId} ${t.trail}`).join(' · ')));
  return lines;
}

/** Each agent's stance id round by round: `S1 → S1 → S1*` (* joined the majority, ↗ moved, ↘ left it). */
export function stanceTrails(rounds: readonly RoundStances[], agentIds: readonly string[]): { agentId: string; trail: string }[] {
  if (rounds.length === 0) return [];
  const ids = agentIds.length ? agentIds : [...new Set(rounds.flatMap((r) => r.agents.map((a) => a.agentId)))];
  const mark: Record<StanceMove, string> = { opened: '', held: '', moved: '↗', joined: '*', left: '↘', absent: '' };
  return ids.map((agentId) => ({
    agentId,
    trail: rounds
      .map((r) => {
        const a = r.agents.find((x) => x.agentId === agentId);
        return a?.stance ? `${a.stance}${mark[a.move]}` : '–';
      })
      .join(' → '),
  }));
}

/**
 * Markdown that must stay on its line: a table row, or a line that names what follows. The text is
 * already escaped (`markdownDeep`); its line breaks, which would end the row or start a block of
 * their own, become spaces.
 */
function mdLine(text: string): string {
  return text.replace(/\s*[\n\u2028\u2029]\s*/g, ' ');
}

const mdRow = (cells: readonly string[]): string => mdLine(`| ${cells.join(' | ')} |`);

/** The Markdown section of the panel: families, stances per round, figures. */
export function panelMarkdown(d: StoredDebate): string[] {
  const p = panelOf(d);
  if (!p) return [];
  const out = ['## Panel', ''];
  if (p.families) {
    out.push('| agent | model | family | parameters | quantization | from |', '|---|---|---|---|---|---|');
    for (const f of p.families) {
      const family = `${familyName(f)}${f.families && f.families.length > 1 ? ` (${f.families.join(', ')})` : ''}`;
      out.push(mdRow([f.agentId, `\`${f.model}\``, family, f.parameterSize ?? '-', f.quantization ?? '-', f.source]));
    }
    out.push('');
  }
  if (p.figures) {
    out.push(mdLine(`- Stances: ${stancesCountText(p.figures)}`), mdLine(`- Joined the majority: ${joinsText(p.figures)}`));
    out.push(`- Families: ${p.figures.familiesAll.families.length} among all agents${p.figures.familiesAll.unknown ? ` (${p.figures.familiesAll.unknown} unknown)` : ''}, ${p.figures.familiesRestsOn.families.length} among those the synthesis rests on`, '');
  }
  if (p.rounds.length) {
    const agents = p.families?.map((f) => f.agentId) ?? [...new Set(p.rounds.flatMap((r) => r.agents.map((a) => a.agentId)))];
    out.push(mdRow(['agent', ...p.rounds.map((r) => `round ${r.round}`)]), `|---|${p.rounds.map(() => '---|').join('')}`);
    for (const id of agents) {
      const cells = p.rounds.map((r) => {
        const a = r.agents.find((x) => x.agentId === id);
        return a?.stance ? `${a.stance} (${MOVE_WORD[a.move]}${a.reasoned === false ? ', no reason stated' : ''})` : '–';
      });
      out.push(mdRow([id, ...cells]));
    }
    out.push('');
    for (const r of p.rounds) {
      out.push(mdLine(`Round ${r.round} stances: ${r.stances.map((s) => `**${s.id}** ${s.summary} (${s.agents.join(', ')})`).join('; ')}`), '');
      if (r.notes.length) out.push(mdLine(`_Normalised: ${r.notes.join('; ')}_`), '');
    }
  }
  return out;
}

/** The document's `panel` field: families, each round's stances with every agent's move, and the figures. */
export function panelDocument(d: StoredDebate): Record<string, unknown> | null {
  const p = panelOf(d);
  if (!p) return null;
  return { families: p.families, rounds: p.rounds, figures: p.figures };
}
