import type { DebateEvent } from '../engine/events.js';
import { describeUses } from '../protocol/material.js';
import type { StoredDebate } from '../store/store.js';
import type { painter } from './style.js';
import { callPlaceText } from './place.js';
import { formatNumber, plural } from '../plural.js';

type Paint = ReturnType<typeof painter>;
type Wrap = (text: string, width: number) => string[];

/** What the token budget did in a stored run: tokens counted, the limit, calls skipped, and whether it cut the run short. */
export interface BudgetSummary {
  limit: number | null;
  /** Prompt plus reply tokens of every recorded call, as Ollama counted them. */
  used: number;
  calls: number;
  skipped: number;
  truncated: number;
  /** Why the run was cut short, when it was. */
  cutShort: string | null;
}

export function budgetSummary(d: StoredDebate): BudgetSummary {
  const limit = d.preset.protocol.tokenBudget ?? null;
  const used = d.calls.reduce((s, c) => s + (c.budget?.actual ?? (c.metrics.promptTokens ?? 0) + (c.metrics.completionTokens ?? 0)), 0);
  const decisions = d.budgetDecisions ?? [];
  const skipped = decisions.filter((x) => x.kind === 'skip').length;
  const stop = decisions.find((x) => x.kind === 'stop');
  const cutShort = stop ? stop.detail : skipped > 0 ? `${skipped} agent call${skipped === 1 ? '' : 's'} skipped when the budget ran out` : null;
  return { limit, used, calls: d.calls.length, skipped, truncated: decisions.filter((x) => x.kind === 'truncate').length, cutShort };
}

function tokens(n: number): string {
  return formatNumber(n);
}

function kib(bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** The card's lines on attached material and the token budget; none when the run had neither. */
export function materialCardLines(d: StoredDebate, paint: Paint, width: number, wrap: Wrap): string[] {
  const lines: string[] = [];
  const files = d.attachments ?? [];
  if (files.length) {
    lines.push('', paint('bold', 'ATTACHED MATERIAL'));
    for (const f of files) lines.push(`  ${f.name} ${paint('dim', `(${kib(f.bytes)}, sha256 ${f.sha256.slice(0, 12)}…)`)}`);
    const excerpted = d.calls.filter((c) => c.material?.some((u) => u.mode !== 'inline')).length;
    const given = d.calls.filter((c) => c.material?.length).length;
    if (given) lines.push(paint('dim', `  ${given} agent call${given === 1 ? '' : 's'} read it: ${given - excerpted} whole, ${excerpted} as excerpts chosen for the agent`));
  }
  const b = budgetSummary(d);
  if (b.limit !== null) {
    const share = Math.round((b.used / b.limit) * 100);
    lines.push('', paint('bold', `TOKEN BUDGET: ${tokens(b.used)} of ${tokens(b.limit)} tokens (${share}%) in ${plural(b.calls, 'call')}`));
    if (b.truncated) lines.push(paint('dim', `  material or peers' reasoning cut in ${b.truncated} prompt${b.truncated === 1 ? '' : 's'} (from 80% of the budget)`));
    if (b.cutShort) lines.push(...wrap(`Cut short by the budget: ${b.cutShort}.`, width - 2).map((l) => `  ${paint('yellow', l)}`));
  }
  return lines;
}

export function materialMarkdown(d: StoredDebate): string[] {
  const out: string[] = [];
  const files = d.attachments ?? [];
  if (files.length) {
    out.push('## Attached material', '', '| file | bytes | sha256 |', '|---|---|---|');
    for (const f of files) out.push(`| ${f.name} | ${f.bytes} | \`${f.sha256}\` |`);
    out.push('');
    const given = d.calls.filter((c) => c.material?.length);
    if (given.length) {
      out.push('What each agent call read of it:', '');
      for (const c of given) out.push(`- ${callPlaceText(c.stage, c.round)}, ${c.agentId}: ${describeUses(c.material!)}`);
      out.push('');
    }
  }
  const b = budgetSummary(d);
  if (b.limit !== null) {
    out.push('## Token budget', '', `${tokens(b.used)} of ${tokens(b.limit)} tokens (${Math.round((b.used / b.limit) * 100)}%) in ${plural(b.calls, 'call')}.${b.cutShort ? ` Cut short: ${b.cutShort}.` : ''}`, '');
    for (const x of d.budgetDecisions ?? []) out.push(`- ${x.kind} at ${tokens(x.used)} tokens: ${x.detail}`);
    if (d.budgetDecisions?.length) out.push('');
  }
  return out;
}

/** The JSON document's `attachments` (whole text included) and `budget`. */
export function materialDocument(d: StoredDebate): { attachments: unknown[]; budget: unknown } {
  const b = budgetSummary(d);
  return {
    attachments: (d.attachments ?? []).map((f) => ({ name: f.name, bytes: f.bytes, sha256: f.sha256, content: f.content })),
    budget: {
      limit: b.limit,
      used: b.used,
      calls: b.calls,
      skipped: b.skipped,
      truncated: b.truncated,
      cutShort: b.cutShort,
      decisions: d.budgetDecisions ?? [],
    },
  };
}

/** The live view's lines for material and budget events. */
export function materialLiveView(paint: Paint): (event: DebateEvent) => string[] {
  let used = 0;
  let spent = 0;
  let limit: number | null = null;
  return (event) => {
    switch (event.type) {
      case 'debate.started': {
        limit = event.preset.protocol.tokenBudget ?? null;
        const lines = (event.attachments ?? []).map((f) => `  ${paint('dim', 'attached:')} ${f.name} ${paint('dim', `(${kib(f.bytes)}, sha256 ${f.sha256.slice(0, 12)}…)`)}`);
        if (limit !== null) lines.push(`  ${paint('dim', 'token budget:')} ${tokens(limit)}`);
        return lines;
      }
      case 'call.finished':
        if (event.call.budget) {
          used = event.call.budget.used;
          spent = event.call.budget.spent ?? used;
        }
        return [];
      case 'round.started': {
        if (limit === null || used <= 0) return [];
        // Calls still running count their estimate until they end; said so, the figure may go down.
        const held = used - spent;
        const inFlight = held > 0 ? `; ${tokens(spent)} spent by calls that ended, ${tokens(held)} estimated for calls still in flight (counted for real when they end)` : '';
        return [paint('dim', `  budget: ${tokens(used)} of ${tokens(limit)} tokens counted (${Math.round((used / limit) * 100)}%)${inFlight}`)];
      }
      case 'budget.decision':
        return [paint('yellow', `  budget ${event.decision.kind}: ${event.decision.detail}`)];
      default:
        return [];
    }
  };
}
