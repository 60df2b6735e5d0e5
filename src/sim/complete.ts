import { generateFromSchema } from './generate.js';
import { isRecord, checkCapabilities, checkOptions, checkTypes, HttpError, parseKeepAlive, parseMessages, promptMessages, requestSeed, toRunnerOptions, truncateToContext, validateFormat } from './request.js';
import { type Attachment, CanceledError, type ModelSpec, QueueFullError } from './scheduler.js';
import type { SimReply } from './sim-types.js';
import { lookup, type SimState } from './state.js';
import { chunkShape, contextTokens, finalShape, sleep, splitIntoChunks, thinkingText } from './stream.js';
import type { Wire } from './wire.js';

type ReplyObject = Exclude<SimReply, string>;

/**
 * /api/chat and /api/generate (and, through openai-routes.ts, /v1/chat/completions): the request
 * checked as Ollama checks it, the responder asked, the model attached within the scheduler's
 * slots, then the reply streamed token by token with Ollama's final metrics, or failed the way
 * the script says (an error before or after the first byte, a silent stop).
 */
export async function complete(
  sim: SimState,
  kind: 'chat' | 'generate',
  body: Record<string, unknown>,
  wire: Wire,
  signal: AbortSignal,
): Promise<void> {
  const started = process.hrtime.bigint();
  const struct = kind === 'chat' ? 'ChatRequest' : 'GenerateRequest';
  checkTypes(body, struct, {
    model: 'string',
    stream: 'bool',
    options: 'object',
    ...(kind === 'chat' ? { messages: 'array', tools: 'array' } : { prompt: 'string', system: 'string', raw: 'bool' }),
  });
  const keepAliveMs = parseKeepAlive(body.keep_alive);
  const messages = kind === 'chat' ? parseMessages(body.messages) : promptMessages(body);
  const name = typeof body.model === 'string' ? body.model : '';
  if (name === '' && kind === 'chat') throw new HttpError(400, 'model is required');
  const asked = body.stream !== false;
  const loadOnly = kind === 'chat' ? messages.length === 0 : typeof body.prompt !== 'string' || body.prompt === '';

  if (loadOnly && keepAliveMs === 0) {
    const spec = lookup(sim, name);
    sim.scheduler.countRequest(spec);
    sim.scheduler.expire(spec);
    return wire.json(200, finalShape(kind, name, '', { done_reason: 'unload' }));
  }

  const spec = lookup(sim, name);
  sim.scheduler.countRequest(spec);
  checkCapabilities(kind, spec, body);
  const options = isRecord(body.options) ? body.options : {};
  checkOptions(options);
  const runnerOptions = toRunnerOptions(options, spec);
  const formatError = validateFormat(body.format);

  let visible = messages;
  let reply: ReplyObject = {};
  let index = -1;
  if (!loadOnly && formatError === undefined) {
    visible = truncateToContext(messages, runnerOptions.numCtx);
    const counted = sim.count(spec.name);
    index = counted.index;
    const modelIndex = counted.modelIndex;
    const responded = sim.options.respond
      ? await sim.options.respond({
          model: name,
          messages: visible.map((m) => ({ ...m })),
          format: body.format,
          options: { ...options },
          stream: asked,
          keepAlive: body.keep_alive,
          ...(body.think === undefined ? {} : { think: body.think }),
          index,
          modelIndex,
        })
      : {};
    reply = typeof responded === 'string' ? { content: responded } : (responded ?? {});
  }
  const stream = asked && reply.ignoresStream !== true;

  let attachment: Attachment;
  try {
    attachment = await sim.scheduler.attach(spec, runnerOptions, keepAliveMs, signal);
  } catch (error) {
    if (error instanceof QueueFullError) throw new HttpError(503, error.message);
    if (error instanceof CanceledError) throw new HttpError(499, error.message);
    throw error;
  }
  const scheduled = process.hrtime.bigint();
  try {
    const loadNs = attachment.queued ? Math.max(1, Number(scheduled - started)) : 0;
    if (loadOnly) {
      return wire.json(200, finalShape(kind, name, '', { done_reason: 'load' }));
    }
    // Ollama checks format inside the runner's Completion, after the model is loaded.
    if (formatError !== undefined) throw new HttpError(500, formatError);
    try {
      await attachment.acquireSlot(signal);
    } catch {
      throw new HttpError(499, 'request canceled');
    }
    if (reply.delayMs && !(await sleep(reply.delayMs, signal))) return;
    if (reply.error !== undefined && reply.failAfterTokens === undefined) {
      throw new HttpError(reply.status ?? 500, reply.error, reply.retryAfter);
    }
    const promptTokens = Math.max(1, Math.ceil(visible.reduce((n, m) => n + m.content.length, 0) / 4));
    const promptStart = process.hrtime.bigint();
    if (!(await sleep((sim.options.promptMsPerToken ?? 0) * promptTokens, signal))) return;
    const promptNs = Math.max(1, Number(process.hrtime.bigint() - promptStart));

    const content = reply.content ?? defaultContent(body.format, spec, index, requestSeed(name, visible, body.format, options));
    // A thinking model thinks first unless sent `think: false`; num_predict bounds thinking and answer together.
    const thinks = (spec.thinkingTokens ?? 0) > 0 && body.think !== false;
    let thought = thinks ? (reply.thinking ?? thinkingText(spec.thinkingTokens ?? 0, index)) : '';
    let answer = content;
    if (thinks && reply.answerInThinking) {
      thought += answer;
      answer = '';
    }
    let thinkingChunks = splitIntoChunks(thought);
    let chunks = splitIntoChunks(answer);
    let doneReason = reply.doneReason ?? 'stop';
    const numPredict = typeof options.num_predict === 'number' ? options.num_predict : -1;
    if (numPredict > 0 && thinkingChunks.length + chunks.length > numPredict) {
      thinkingChunks = thinkingChunks.slice(0, numPredict);
      chunks = chunks.slice(0, numPredict - thinkingChunks.length);
      doneReason = reply.doneReason ?? 'length';
    }
    const cutAt = reply.dropAfterTokens ?? reply.crashAfterTokens ?? reply.stallAfterTokens;
    const failAt = reply.error !== undefined ? Math.min(reply.failAfterTokens ?? 0, chunks.length) : cutAt !== undefined ? Math.min(cutAt, chunks.length) : undefined;
    const metrics = (evalCount: number, evalNs: number) => ({
      done_reason: doneReason,
      context: kind === 'generate' && body.raw !== true ? contextTokens(promptTokens + evalCount) : undefined,
      total_duration: Number(process.hrtime.bigint() - started),
      load_duration: loadNs,
      prompt_eval_count: promptTokens,
      prompt_eval_duration: promptNs,
      eval_count: evalCount,
      eval_duration: evalCount > 0 ? Math.max(1, evalNs) : 0,
    });

    const tokenMs = sim.options.tokenMs ?? 0;
    const evalStart = process.hrtime.bigint();
    const limit = failAt ?? chunks.length;
    let sent = '';
    for (const piece of thinkingChunks) {
      if (!(await sleep(tokenMs, signal))) return;
      if (stream) await wire.line(chunkShape(kind, name, '', piece));
    }
    for (let i = 0; i < limit; i++) {
      if (!(await sleep(tokenMs, signal))) return;
      const piece = chunks[i]!;
      sent += piece;
      if (stream) await wire.line(chunkShape(kind, name, piece));
    }
    if (signal.aborted) return;
    const evalNs = Number(process.hrtime.bigint() - evalStart);

    if (reply.crashAfterTokens !== undefined && reply.error === undefined) {
      await sim.kill();
      return;
    }
    if (reply.stallAfterTokens !== undefined && reply.error === undefined) {
      if (reply.powerOff) sim.unplug();
      // Silent until the client gives up: no more bytes, no end, no reset.
      await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
      return;
    }
    if (reply.dropAfterTokens !== undefined && reply.error === undefined) {
      wire.drop();
      return;
    }
    if (failAt !== undefined) {
      // After the first byte the status is already 200: the error becomes the last line.
      if (!stream) throw new HttpError(500, reply.error ?? 'error');
      await wire.line({ error: reply.error });
      wire.end();
      return;
    }
    if (reply.silentStop) {
      if (!stream) return wire.json(200, chunkShape(kind, name, sent));
      wire.cut();
      return;
    }
    const final = finalShape(kind, name, stream ? '' : sent, metrics(thinkingChunks.length + chunks.length, evalNs));
    if (!stream) {
      if (thinks) {
        if (kind === 'chat') (final.message as Record<string, unknown>).thinking = thinkingChunks.join('');
        else final.thinking = thinkingChunks.join('');
      }
      return wire.json(200, final);
    }
    await wire.line(final);
    wire.end();
  } finally {
    attachment.release();
  }
}

function defaultContent(format: unknown, spec: ModelSpec, index: number, seed: number): string {
  // Seeded by the request, not by how many came before: the same request gets the same reply.
  if (isRecord(format)) return JSON.stringify(generateFromSchema(format, seed));
  if (format === 'json') return '{}';
  const n = index + 1;
  return `Reply ${n} from ${spec.name}: on balance the evidence favours a cautious, staged approach.`;
}
