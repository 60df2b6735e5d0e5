import type { PlanThinking } from '../schedule/plan.js';
import { clipLine, visibleWidth, wrapLine } from './wrap.js';
import { exitText } from './exit.js';
import type { ProtocolKind } from '../config/preset-schema.js';
import type { DebateEvent, DebateListener, QualityRecord, Stage } from '../engine/events.js';
import { inertDeep, inertLine } from './inert.js';
import { type TermStyle, painter } from './style.js';
import { PROTOCOL_LABEL, kindOf, protocolLiveView, roundTitle } from './protocols.js';
import { qualityLiveLines } from './quality.js';
import { tensionLiveView } from './tensions.js';
import { materialLiveView } from './material.js';
import { votingLiveView } from './voting.js';
import { STREAM_INTERVAL_MS } from '../events/stream-text.js';
import { StreamedReply, streamedLines } from './streamed-lines.js';
import { debateSettingsLine } from '../protocol/anti-conformity.js';
import { formatNumber } from '../plural.js';

interface ActiveCall {
  stage: Stage;
  label: string;
  model: string;
  tokens: number;
  started: number;
  attempt: number;
  /** The reply streamed so far, and what was last read of it (streamed-lines.ts). */
  stream: StreamedReply;
}

const STAGE_LABEL: Record<Stage, string> = {
  opening: 'answering',
  critique: 'critiquing',
  judge: 'judging',
  synthesis: 'synthesizing',
  claims: 'listing claims',
  clash: 'mapping clashes',
  targeted: 'answering a targeted challenge',
  vote: 'voting',
  refine: 'refining after the vote',
  verdict: 'judging a match',
  split: 'splitting the question',
  advice: 'choosing the protocol',
  fallback: 'writing a fallback analysis',
  subanswer: 'answering a sub-question',
  reassembly: 'reassembling the answer',
  plan: 'writing the plan',
  observe: 'adding observations',
  review: 'reviewing',
  filter: 'filtering the findings',
};

/**
 * The progress view on stderr. On a TTY it keeps a block of "who is thinking" lines
 * redrawn in place; elsewhere (pipes, CI, NO_COLOR terminals still get text) it prints
 * one plain line per event. Replays feed stored events through the same code.
 */
export function liveRenderer(out: NodeJS.WritableStream, style: TermStyle, opts: { now?: () => number; showThinking?: boolean } = {}): DebateListener & { close(): void; note(line: string): void } {
  const now = opts.now ?? Date.now;
  const showThinking = opts.showThinking === true;
  const paint = painter(style);
  const active = new Map<string, ActiveCall>();
  // The rating that counts for each result, shown on its turn line.
  const ratings = new Map<string, QualityRecord>();
  let blockLines = 0;
  let drawnAt = Number.NEGATIVE_INFINITY;
  // After Ctrl-C, calls end aborted: say so once, not as failures the debate goes on after.
  let stopping = false;
  let exitShown = false;
  let timer: NodeJS.Timeout | null = null;

  const key = (stage: Stage, round: number, agentId: string): string => `${stage}:${round}:${agentId}`;
  // The judge can referee several matches of a bracket round at once: same stage, round and id.
  const freeKey = (k: string): string => {
    let free = k;
    for (let n = 2; active.has(free); n++) free = `${k}#${n}`;
    return free;
  };
  const heldKey = (k: string): string | undefined => (active.has(k) ? k : [...active.keys()].find((x) => x.startsWith(`${k}#`)));

  const clearBlock = (): void => {
    if (!style.live || blockLines === 0) return;
    out.write(`\u001b[${blockLines}F\u001b[J`);
    blockLines = 0;
  };
  const drawBlock = (): void => {
    if (!style.live) return;
    clearBlock();
    drawnAt = now();
    const lines = [...active.entries()].flatMap(([k, a]) => {
      const secs = ((now() - a.started) / 1000).toFixed(0);
      const retry = a.attempt === 2 ? ' (quality retry)' : a.attempt > 0 ? ' (repair)' : '';
      const thinking = a.stream.thinking(a.tokens) ? 'thinking · ' : '';
      const head = `  ${paint('cyan', '…')} ${a.label}${retry} ${paint('dim', `${a.model} · ${thinking}${a.tokens} tokens · ${secs}s`)}`;
      // Two calls under one name (a judge refereeing two matches) interleave their tokens: no text for them.
      const shared = k.includes('#') || active.has(`${k}#2`);
      return [head, ...(shared ? [] : streamedLines(a.stream, a.stage, style.columns, paint, showThinking))];
    });
    // One row per call, never wrapped: the block is redrawn by counting its rows.
    for (const line of lines) out.write(`${clipLine(line, style.columns)}\n`);
    blockLines = lines.length;
  };
  const print = (line: string): void => {
    clearBlock();
    // Every line fits the terminal: a long one wraps under its own indent.
    for (const fitted of wrapLine(line, style.columns)) out.write(`${fitted}\n`);
    drawBlock();
  };
  if (style.live) {
    timer = setInterval(drawBlock, 250);
    timer.unref();
  }

  const voteView = votingLiveView(paint);
  const tensionView = tensionLiveView(paint, style.columns);
  const protocolView = protocolLiveView(paint, style.columns);
  const materialView = materialLiveView(paint);
  let kind: ProtocolKind = 'debate';
  const listener = (untrusted: DebateEvent): void => {
    // A streamed token moves its turn's counter and its text; the block is redrawn at most every 100 ms.
    if (untrusted.type === 'turn.progress') {
      // Plain output draws no block: it has nothing to keep.
      if (!style.live) return;
      const held = heldKey(key(untrusted.stage, untrusted.round, untrusted.agentId));
      const a = held === undefined ? undefined : active.get(held);
      if (!a) return;
      a.tokens = untrusted.tokens;
      a.stream.add(untrusted.delta, untrusted.thought);
      if (now() - drawnAt >= STREAM_INTERVAL_MS) drawBlock();
      return;
    }
    // Model text and server messages reach the terminal only without control characters.
    const event = inertDeep(untrusted);
    for (const line of voteView(event)) print(line);
    for (const line of tensionView(event)) print(line);
    for (const line of protocolView(event)) print(line);
    const material = materialView(event);
    for (const line of qualityLiveLines(event, paint)) print(line);
    switch (event.type) {
      case 'debate.started': {
        const panel = event.agents
          .filter((a) => a.role === 'debater')
          .map((a) => `${a.id} (${a.model})`)
          .join(', ');
        kind = kindOf(event);
        const protocol = kind === 'debate' ? '' : ` · ${PROTOCOL_LABEL[kind]}`;
        print(paint('bold', `Debate ${event.debateId}`) + paint('dim', ` · preset ${event.preset.name}${protocol} · ${event.host}`));
        print(`  ${paint('dim', 'question:')} ${event.question}`);
        for (const c of event.preset.constraints ?? []) print(`  ${paint('dim', 'constraint:')} ${c}`);
        print(`  ${paint('dim', 'panel:')} ${panel}`);
        if (kind === 'decompose') print(`  ${paint('dim', 'decomposer:')} ${event.preset.protocol.decomposer ?? event.preset.agents[0]?.id ?? ''}`);
        else if (kind === 'pipeline') print(`  ${paint('dim', 'roles:')} ${event.preset.agents.map((a) => `${a.id} (${a.role ?? 'reviewer'})`).join(', ')}`);
        else if (kind === 'parallel') print(`  ${paint('dim', 'synthesizer:')} ${event.preset.synthesizer.model ?? ''}`);
        else print(`  ${paint('dim', 'judge:')} ${event.preset.judge.model}  ${paint('dim', 'synthesizer:')} ${event.preset.synthesizer.model ?? ''}`);
        const settings = kind === 'debate' ? debateSettingsLine(event.preset.protocol) : null;
        if (settings) print(`  ${paint('dim', 'protocol:')} ${settings}`);
        const plan = event.plan as
          | { models?: { model: string; numCtx: number; slots: number }[]; groups?: string[][]; thinking?: PlanThinking[]; hosts?: { url: string; api?: string; device?: string }[] }
          | undefined;
        if (plan?.models) {
          const slots = plan.models.map((m) => `${m.model} ×${m.slots}`).join(', ');
          print(`  ${paint('dim', 'schedule:')} ${slots}${plan.groups && plan.groups.length > 1 ? paint('dim', ` · panel runs in ${plan.groups.length} groups per round`) : ''}`);
        }
        for (const h of plan?.hosts ?? []) if (h.api === 'embedded') print(`  ${paint('dim', 'device:')} ${h.device ?? 'CPU'} (embedded llama.cpp, one model loaded at a time)`);
        if (plan?.thinking?.length) print(`  ${paint('dim', 'thinking:')} ${thinkingLine(plan.thinking)}`);
        for (const line of material) print(line);
        for (const w of event.warnings) print(paint('yellow', `  warning: ${w}`));
        break;
      }
      case 'round.started': {
        const title = roundTitle(kind, event.round);
        if (title) print(paint('bold', `\n${title}`));
        for (const line of material) print(line);
        break;
      }
      case 'budget.decision':
        for (const line of material) print(line);
        break;
      case 'turn.started': {
        const label = `${event.agentId} ${STAGE_LABEL[event.stage]}`;
        active.set(freeKey(key(event.stage, event.round, event.agentId)), { stage: event.stage, label, model: event.model, tokens: 0, started: now(), attempt: event.attempt, stream: new StreamedReply() });
        if (!style.live && event.attempt % 2 === 1) print(`  ${event.agentId}: asking again with the validation error (repair)`);
        break;
      }
      case 'call.finished': {
        const c = event.call;
        const held = heldKey(key(c.stage, c.round, c.agentId));
        if (held !== undefined) active.delete(held);
        if (c.status === 'aborted') stopping = true;
        if (stopping && c.status === 'aborted') break;
        if (c.status === 'error' || c.status === 'aborted') {
          print(paint('red', `  ✗ ${c.agentId} (${c.model}): ${c.error}`));
        } else if (c.status === 'invalid') {
          print(paint('yellow', `  ! ${c.agentId} (${c.model}) replied with unusable JSON: ${firstLine(c.validationError ?? '')}`));
        } else if (c.stage === 'opening' || c.stage === 'critique' || c.stage === 'subanswer') {
          const secs = ((c.finishedAt - c.startedAt) / 1000).toFixed(1);
          print(`  ${paint('green', '✓')} ${c.agentId} ${paint('dim', `${c.metrics.completionTokens ?? '?'} tokens · ${secs}s`)}`);
        }
        break;
      }
      case 'quality.rated':
        ratings.set(key(event.rating.stage, event.rating.round, event.rating.agentId), event.rating);
        break;
      case 'turn.finished': {
        const t = event.turn;
        if (t.status === 'ok' && t.position) {
          const rating = ratings.get(key(t.round === 0 ? 'opening' : 'critique', t.round, t.agentId));
          const conf = t.confidence == null && !rating ? '' : paint('dim', ` (${[t.confidence == null ? '' : `confidence ${t.confidence.toFixed(2)}`, rating ? `quality ${rating.score}` : ''].filter(Boolean).join(', ')})`);
          const head = `    ${paint('magenta', t.agentId)}${conf}: `;
          print(`${head}${oneLine(t.position, Math.max(20, style.columns - visibleWidth(head)))}`);
        } else if (!stopping) {
          print(paint('red', `    ${t.agentId}: no usable answer this round (${t.error ?? t.status})`));
        }
        break;
      }
      case 'round.judged': {
        const j = event.judgement;
        if (j.status === 'ok' && j.score && j.convergence !== null) {
          print(
            `  ${paint('bold', 'judge')}: convergence ${paint('bold', j.convergence.toFixed(2))} ` +
              paint('dim', `(recommendation ${j.score.recommendation.toFixed(2)}, facts ${j.score.facts.toFixed(2)}, caveats ${j.score.caveats.toFixed(2)})`),
          );
        } else if (!stopping) {
          // A score skipped by the budget is followed by the budget's own stop line.
          const goesOn = j.error?.startsWith('skipped by the token budget') ? '' : '; the debate goes on';
          print(paint('yellow', `  judge: no score this round (${j.error})${goesOn}`));
        }
        break;
      }
      case 'warning':
        print(paint('yellow', `  warning: ${event.message}`));
        break;
      case 'debate.exit':
        if (exitShown) break;
        exitShown = true;
        // Stopped by the user: the calls still shown as running were cancelled; clear them before saying so.
        if (event.reason === 'interrupted') active.clear();
        print(paint('bold', `\nStopped: ${exitText(event.reason)}`) + paint('dim', ` · ${event.detail}${event.reason === 'interrupted' && active.size === 0 ? '; the calls in flight were cancelled' : ''}`));
        break;
      case 'synthesis.finished':
        if (event.result.status !== 'ok') print(paint('red', `  synthesis failed: ${event.result.error}`));
        break;
      case 'debate.finished':
        active.clear();
        clearBlock();
        break;
    }
  };
  return Object.assign(listener, {
    // Token counts and streamed text are drawn only by the live block.
    progress: style.live,
    /** A line of the command's own, printed above the live block. */
    note(line: string): void {
      print(inertLine(line));
    },
    close(): void {
      if (timer) clearInterval(timer);
      clearBlock();
    },
  });
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const limit = Math.max(30, max);
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

function firstLine(text: string): string {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).slice(0, 2).join(' ');
}

/** The header's thinking line, roles grouped by how they think: `reasoner, skeptic on (model default, 3,072 tokens of room) · judge off`. */
export function thinkingLine(thinking: readonly PlanThinking[]): string {
  const groups = new Map<string, string[]>();
  for (const t of thinking) {
    const how = !t.thinks ? 'off' : `${t.think === 'default' ? 'on (model default' : t.think === 'true' ? 'on (' : `${t.think} (`}${t.think === 'default' ? ', ' : ''}${formatNumber(t.room)} tokens of room)`;
    groups.set(how, [...(groups.get(how) ?? []), t.role]);
  }
  return [...groups].map(([how, roles]) => `${roles.join(', ')} ${how}`).join(' · ');
}
