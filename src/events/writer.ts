import type { DebateEvent, DebateListener } from '../engine/events.js';
import { type ConclaveEvent, EVENTS_VERSION, type EventBody } from './schema.js';
import { StreamTracker } from './stream-text.js';
import { jsonText } from '../render/inert.js';

export interface EventsWriter extends DebateListener {
  /** Writes one event of the writer's own (a `synthesize` run's calls, a bench's end). */
  emit<T extends ConclaveEvent['type']>(type: T, body: EventBody<T>, debateId?: string | null, at?: number): void;
  /** Writes the last line. Further events are dropped. */
  end(status: string, exitCode: number, error: string | null, debateId?: string | null): void;
  /** Whether the end line was written. */
  ended(): boolean;
}

/** The `seq` of one output, shared by the writers of debates that run at once (a bench's items). */
export interface EventCounter {
  seq: number;
}

/**
 * The `--events` listener: each engine event as one NDJSON line on `out`, streamed text
 * included (throttled per call). Lines are built with `jsonText`, so model text is a
 * plain JSON string and can never break a line or the stream, and the C1 and direction
 * controls JSON.stringify leaves raw are `\u` escapes: a terminal or pager that shows the
 * stream is not driven by them, and a parser reads back the exact text.
 */
export function eventsWriter(out: NodeJS.WritableStream, opts: { now?: () => number; intervalMs?: number; debateId?: string; counter?: EventCounter } = {}): EventsWriter {
  const now = opts.now ?? Date.now;
  const counter = opts.counter ?? { seq: 0 };
  let debateId: string | null = opts.debateId ?? null;
  let ended = false;
  const write = (type: string, body: object, id: string | null = debateId, at: number = now()): void => {
    if (ended) return;
    out.write(`${jsonText({ v: EVENTS_VERSION, debateId: id, seq: ++counter.seq, type, at, ...body })}\n`);
  };
  const tracker = new StreamTracker(
    (c) => write('call.delta', { stage: c.stage, round: c.round, agentId: c.agentId, tokens: c.tokens, thinking: c.thinking, field: c.field, text: c.text }),
    { now, ...(opts.intervalMs === undefined ? {} : { intervalMs: opts.intervalMs }) },
  );

  const listener = (e: DebateEvent): void => {
    switch (e.type) {
      case 'debate.started':
        debateId = e.debateId;
        write(
          'plan',
          {
            question: e.question,
            preset: e.preset.name,
            protocol: e.preset.protocol.kind ?? 'debate',
            host: e.host,
            agents: e.agents.map((a) => ({ id: a.id, model: a.model, role: a.role, persona: a.persona })),
            plan: e.plan ?? null,
            warnings: e.warnings,
          },
          debateId,
          e.at,
        );
        break;
      case 'round.started':
        write('round', { round: e.round }, debateId, e.at);
        break;
      case 'turn.started':
        tracker.started(e.stage, e.round, e.agentId);
        write('call.started', { stage: e.stage, round: e.round, agentId: e.agentId, model: e.model, attempt: e.attempt }, debateId, e.at);
        break;
      case 'turn.progress':
        tracker.progress(e.stage, e.round, e.agentId, e.tokens, e.delta);
        break;
      case 'call.finished': {
        const c = e.call;
        tracker.finished(c.stage, c.round, c.agentId);
        write(
          'call.finished',
          {
            stage: c.stage,
            round: c.round,
            agentId: c.agentId,
            model: c.model,
            attempt: c.attempt,
            status: c.status,
            error: c.status === 'invalid' ? (c.validationError ?? c.error) : c.error,
            promptTokens: c.metrics.promptTokens,
            completionTokens: c.metrics.completionTokens,
            thinkingTokens: c.thinkingTokens ?? null,
            durationMs: c.finishedAt - c.startedAt,
          },
          c.debateId,
          c.finishedAt,
        );
        break;
      }
      case 'quality.rated': {
        const r = e.rating;
        write('quality', { stage: r.stage, round: r.round, agentId: r.agentId, try: r.try, score: r.score, action: r.action, reasons: r.reasons }, debateId, e.at);
        break;
      }
      case 'turn.finished': {
        const t = e.turn;
        write('answer', { round: t.round, agentId: t.agentId, status: t.status, position: t.position, confidence: t.confidence, error: t.error }, debateId, e.at);
        break;
      }
      case 'round.judged': {
        const j = e.judgement;
        const score = j.score ? { recommendation: j.score.recommendation, facts: j.score.facts, caveats: j.score.caveats } : null;
        const stances = (j.stances?.stances ?? []).map((s) => ({ id: s.id, summary: s.summary, agents: s.agents }));
        write('judge', { round: j.round, status: j.status, convergence: j.convergence, score, stances, error: j.error }, debateId, e.at);
        break;
      }
      case 'debate.exit':
        write('stop', { reason: e.reason, round: e.round, detail: e.detail }, debateId, e.at);
        break;
      case 'synthesis.finished': {
        const r = e.result;
        write('synthesis', { status: r.status, model: r.model ?? null, recommendation: r.synthesis?.recommendation ?? null, synthesis: r.synthesis, error: r.error }, debateId, e.at);
        break;
      }
      case 'budget.decision':
        write('budget', { ...e.decision }, debateId, e.at);
        break;
      case 'warning':
        write('warning', { message: e.message }, debateId, e.at);
        break;
      case 'debate.finished':
        // The command's `end` line says how it ended, with its exit code.
        tracker.close();
        break;
      case 'vote.cast':
        // The ballot, without the calls behind it: those came as their own `call.finished` lines.
        write('step', { name: e.type, data: { ballot: e.ballot } }, debateId, e.at);
        break;
      default: {
        const { type, at, ...data } = e;
        write('step', { name: type, data }, debateId, at);
      }
    }
  };

  return Object.assign(listener, {
    progress: true,
    emit<T extends ConclaveEvent['type']>(type: T, body: EventBody<T>, id: string | null = debateId, at: number = now()): void {
      if (type === 'call.started') {
        const b = body as EventBody<'call.started'>;
        tracker.started(b.stage, b.round, b.agentId);
      }
      if (type === 'call.finished') {
        const b = body as EventBody<'call.finished'>;
        tracker.finished(b.stage, b.round, b.agentId);
      }
      write(type, body, id, at);
    },
    end(status: string, exitCode: number, error: string | null, id: string | null = debateId): void {
      tracker.close();
      write('end', { status, exitCode, error }, id);
      ended = true;
    },
    ended: () => ended,
  });
}
