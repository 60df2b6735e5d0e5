import { synthesizerModel } from '../config/synthesizer.js';
import { markAdvocates } from '../protocol/advocate.js';
import { DebateFailedError, HostError, InputError } from '../errors.js';
import { type ServerTarget, connect } from '../backend/connect.js';
import { stallMsOf } from '../backend/call-control.js';
import { estimateMessagesTokens } from '../protocol/context.js';
import type { TranscriptRound } from '../protocol/prompts.js';
import { sameModel } from '../schedule/facts.js';
import type { StoredDebate, Store } from '../store/store.js';
import type { ChatMessage, DebateListener, SynthesisRecord } from './events.js';
import { lastStep } from './protocol-events.js';
import { modelChanged } from './resumable.js';
import { structuredCall } from './structured-call.js';
import { failedAgentsOf, fitSynthesisPrompt, keepSpokenMinorities, synthesisRecordOf, synthesisSchemaOf } from './synthesis.js';

export interface ResynthesizeOptions {
  store: Store;
  /** The debate's full id. */
  id: string;
  /** The server to synthesize on: an Ollama URL, or a target naming its API (an OpenAI-compatible one). */
  host: string | ServerTarget;
  /** Where its API key is read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Another synthesizer model than the preset's. */
  model?: string;
  now?: () => number;
  signal?: AbortSignal;
  /** Told when the call starts (attempt 0, then 1 for a repair). */
  onStart?: (model: string, attempt: number) => void;
  /** Hears the call as a run's listeners do: `turn.started`, `turn.progress` (when it reads them), `call.finished`, `synthesis.finished`. */
  listener?: DebateListener;
}

const REPLY_TOKENS = 1500;

/** The stored rounds as the runner held them: turns and the judge's reading, oldest first. */
export function transcriptOf(d: StoredDebate): TranscriptRound[] {
  const byRound = new Map<number, TranscriptRound>();
  for (const t of d.turns) {
    const round = byRound.get(t.round) ?? { round: t.round, turns: [], judgement: null };
    round.turns.push(t);
    byRound.set(t.round, round);
  }
  for (const j of d.rounds) {
    const round = byRound.get(j.round);
    if (round) round.judgement = j;
  }
  const rounds = [...byRound.values()].sort((a, b) => a.round - b.round);
  // A devil's advocate's turns are advocacy, and the synthesizer reads them so, as in the run.
  return d.preset.protocol.advocate ? markAdvocates(rounds, d.preset.agents.map((a) => a.id)) : rounds;
}

/**
 * Runs the synthesis of a stored debate again, from its recorded transcript, and
 * records it as a new attempt. A success makes the debate `completed`; a failure
 * leaves its status as it was (`unsynthesized` stays so). Nothing else reruns.
 */
export async function resynthesize(opts: ResynthesizeOptions): Promise<{ record: SynthesisRecord; debate: StoredDebate }> {
  const now = opts.now ?? Date.now;
  const { store, id } = opts;
  const d = store.getDebate(id);
  if (d.status === 'running') {
    throw new InputError('DEBATE_RUNNING', `Debate ${id} is still running; it synthesizes on its own when its rounds end.`, {
      hint: 'Wait for it to finish, or stop it with Ctrl-C first (it is then marked interrupted).',
    });
  }
  if ((d.preset.protocol as { kind?: string }).kind === 'pipeline') {
    throw new InputError('PROTOCOL_NOT_RESYNTHESIZABLE', `Debate ${id} is a review pipeline: its result is the filter's report, which \`synthesize\` does not write.`, {
      hint: `Its plan and reviews are kept: see them with \`conclave show ${id}\`, or run the review again with \`conclave run\`.`,
    });
  }
  const rounds = transcriptOf(d);
  const last = rounds.at(-1);
  const usable = last?.turns.filter((t) => t.status === 'ok' && t.position).length ?? 0;
  // The first synthesis prompt, exactly as sent, carries the optional stages' sections too;
  // a decomposition's is its reassembly, written by the decomposer.
  const previous = [...d.calls].reverse().find((c) => (c.stage === 'synthesis' || c.stage === 'reassembly') && c.attempt === 0);
  if (!previous && (!last || usable === 0)) {
    throw new DebateFailedError('NOTHING_TO_SYNTHESIZE', `Debate ${id} has no usable answer in its last round, so there is nothing to synthesize.`, {
      hint: `See what it recorded with \`conclave show ${id}\`, and run the question again.`,
    });
  }
  const preset = d.preset;
  const writer = previous?.stage === 'reassembly' ? previous.model : synthesizerModel(preset);
  const model = opts.model ?? writer;
  const gateway = connect(typeof opts.host === 'string' ? { url: opts.host } : opts.host, opts.env);
  const tags = await gateway.tags();
  if (!tags.some((t) => sameModel(t.name, model))) {
    throw new HostError('MODEL_MISSING', `Model \`${model}\` is not on ${gateway.host}.`, {
      hint: `${gateway.api === 'ollama' ? `Run \`ollama pull ${model}\` on that host` : 'Serve it from that server'}, or pick another synthesizer with --model.`,
    });
  }

  // The model that wrote the first synthesis, asked again by name, must still be that model: its digest is in the record.
  const recorded = d.agents.find((a) => (previous?.stage === 'reassembly' ? a.id === previous.agentId : a.role === 'synthesizer') && a.digest && sameModel(a.model, model));
  const served = tags.find((t) => sameModel(t.name, model))!;
  if (recorded?.digest && served.digest && served.digest !== recorded.digest) throw modelChanged(model, id, recorded.digest, served.digest, 'pick another synthesizer with --model');

  const failed = failedOf(d, last);
  const agentIds = preset.agents.map((a) => a.id);
  let messages: ChatMessage[];
  if (previous) {
    messages = previous.messages;
  } else if (!last) {
    throw new DebateFailedError('NOTHING_TO_SYNTHESIZE', `Debate ${id} has no rounds to synthesize.`);
  } else {
    const fit = fitSynthesisPrompt(d.question, rounds, agentIds, failed, [], 128_000);
    if (!fit.messages) throw new DebateFailedError('TRANSCRIPT_TOO_LONG', `The transcript of debate ${id} is too long to synthesize.`);
    messages = fit.messages;
  }
  const sameAsBefore = previous && sameModel(previous.model, model);
  const numCtx = sameAsBefore && typeof previous.options.num_ctx === 'number' ? previous.options.num_ctx : contextFor(messages);
  const own = sameModel(writer, model) ? (previous?.stage === 'reassembly' ? preset.agents.find((a) => a.id === previous.agentId)?.options : preset.synthesizer.options) : undefined;
  const round = previous?.round ?? last?.round ?? 0;
  const options = { num_predict: REPLY_TOKENS, temperature: 0.2, ...own, num_ctx: numCtx };

  const listener = opts.listener;
  const stage = previous?.stage ?? 'synthesis';
  const agentId = previous?.agentId ?? 'synthesizer';
  const outcome = await structuredCall(
    gateway,
    {
      debateId: id,
      stage,
      round,
      agentId,
      model,
      messages,
      options,
      // The first prompt, asked again, lists the same collisions to resolve.
      schema: synthesisSchemaOf(preset, round, previous ? collisionIdsOf(d) : []),
      ...(previous?.stage === 'reassembly' ? {} : { normalize: keepSpokenMinorities(rounds) }),
      timeoutMs: preset.protocol.callTimeoutSeconds * 1000,
      stallMs: stallMsOf(preset.protocol),
      ...(opts.signal ? { signal: opts.signal } : {}),
    },
    {
      now,
      onStart: (attempt) => {
        opts.onStart?.(model, attempt);
        listener?.({ type: 'turn.started', stage, round, agentId, model, attempt, at: now() });
      },
      onProgress: listener && listener.progress !== false ? (tokens, delta, thought) => listener({ type: 'turn.progress', stage, round, agentId, tokens, delta, ...(thought ? { thought } : {}) }) : () => {},
      onCall: (call) => {
        store.recordCall(call);
        listener?.({ type: 'call.finished', call });
      },
    },
  );
  const record = synthesisRecordOf(outcome, failed, model);
  store.recordSynthesis(id, record, now());
  listener?.({ type: 'synthesis.finished', result: record, at: now() });
  if (record.status === 'ok') {
    store.finishDebate(id, {
      status: 'completed',
      exitReason: d.exitReason ?? 'max_rounds',
      error: null,
      roundsCompleted: d.roundsCompleted,
      finalConvergence: d.finalConvergence,
      finishedAt: now(),
    });
  } else if (d.status !== 'completed') {
    store.finishDebate(id, {
      status: 'unsynthesized',
      exitReason: d.exitReason ?? 'max_rounds',
      error: `synthesis failed: ${record.error}`,
      roundsCompleted: d.roundsCompleted,
      finalConvergence: d.finalConvergence,
      finishedAt: d.finishedAt ?? now(),
    });
  }
  return { record, debate: store.getDebate(id) };
}

/** Agents without an answer the synthesis must name: a decomposition's failed parts, a tournament's finalists without a final turn. */
function failedOf(d: StoredDebate, last: TranscriptRound | undefined): { agent: string; reason: string }[] {
  const steps = (d.steps ?? []).map((s) => s.step);
  const kind = d.preset.protocol.kind ?? 'debate';
  if (kind === 'decompose') {
    return steps.flatMap((s) => (s.kind === 'subanswer' && s.status !== 'ok' ? [{ agent: s.agentId, reason: `sub-question ${s.index} ${s.status}: ${s.reason}` }] : []));
  }
  if (!last) return [];
  const all = failedAgentsOf(d.preset, last);
  if (kind !== 'tournament') return all;
  const champion = steps.find((s) => s.kind === 'champion');
  const finalists = champion?.kind === 'champion' ? [champion.agentId, champion.runnerUp] : [];
  return all.filter((f) => finalists.includes(f.agent));
}

/** num_ctx for a synthesizer the debate did not size: the prompt and the reply, in steps of 1024. */
function contextFor(messages: ChatMessage[]): number {
  return Math.max(4096, Math.ceil((estimateMessagesTokens(messages) + REPLY_TOKENS) / 1024) * 1024);
}

/** The collisions the debate's synthesis (or reassembly) was told to resolve, from its recorded constraints step. */
function collisionIdsOf(d: StoredDebate): string[] {
  return lastStep(d.steps, 'constraints')?.collisions.map((c) => c.id) ?? [];
}
