import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { type Wire, dropConnection, sendJson, writeText } from './wire.js';

/**
 * The OpenAI-compatible face of the simulator, as Ollama's own /v1 middleware does it: a
 * `/v1/chat/completions` body becomes an `/api/chat` body, and the chat's chunks go out as
 * Server-Sent Events (`chat.completion.chunk`, the finish reason, a usage chunk when
 * `stream_options.include_usage` asks, then `[DONE]`).
 */

/** An OpenAI error body: `{error: {message, type, param, code}}`. */
export function openAIError(res: ServerResponse, status: number, message: string, code: string | null = null): void {
  const type = status === 401 ? 'invalid_request_error' : status === 404 ? 'not_found_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  sendJson(res, status, { error: { message, type, param: null, code } });
}

/** Fields of the OpenAI request that have an Ollama option. */
const OPTION_OF: Readonly<Record<string, string>> = {
  max_tokens: 'num_predict',
  max_completion_tokens: 'num_predict',
  temperature: 'temperature',
  top_p: 'top_p',
  seed: 'seed',
  stop: 'stop',
  presence_penalty: 'presence_penalty',
  frequency_penalty: 'frequency_penalty',
};

export class OpenAIRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The `/api/chat` body for a `/v1/chat/completions` body, and what the reply must carry. */
export function toOllamaChat(body: Record<string, unknown>): { chat: Record<string, unknown>; includeUsage: boolean; stream: boolean } {
  if (typeof body.model !== 'string' || body.model === '') throw new OpenAIRequestError(400, 'model is required');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new OpenAIRequestError(400, "'messages' is required and must not be empty");
  const options: Record<string, unknown> = {};
  for (const [field, option] of Object.entries(OPTION_OF)) if (body[field] !== undefined && body[field] !== null) options[option] = body[field];
  const chat: Record<string, unknown> = { model: body.model, messages: body.messages, stream: body.stream === true, options };
  const format = body.response_format as { type?: unknown; json_schema?: { schema?: unknown } } | undefined;
  if (format?.type === 'json_schema') {
    if (!format.json_schema || typeof format.json_schema.schema !== 'object' || format.json_schema.schema === null) {
      throw new OpenAIRequestError(400, "response_format json_schema needs a 'schema' object");
    }
    chat.format = format.json_schema.schema;
  } else if (format?.type === 'json_object') {
    chat.format = 'json';
  } else if (format !== undefined && format.type !== 'text') {
    throw new OpenAIRequestError(400, `invalid response_format type '${String(format.type)}'`);
  }
  // Ollama's /v1 turns a reasoning effort into `think`.
  if (body.reasoning_effort === 'low' || body.reasoning_effort === 'medium' || body.reasoning_effort === 'high') chat.think = body.reasoning_effort;
  if (body.reasoning_effort === 'none') chat.think = false;
  const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
  return { chat, includeUsage: streamOptions?.include_usage === true, stream: body.stream === true };
}

/** Sends an Ollama-shaped reply as an OpenAI one: SSE chunks when streamed, a `chat.completion` otherwise. */
export function openAIWire(res: ServerResponse, opts: { includeUsage: boolean }): Wire {
  const id = `chatcmpl-${randomBytes(6).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  let roleSent = false;
  const event = (value: unknown): Promise<void> => {
    if (res.destroyed) return Promise.resolve();
    if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    return writeText(res, `data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`);
  };
  const chunk = (model: unknown, delta: Record<string, unknown>, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: 'fp_ollama',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const usageOf = (final: Record<string, unknown>) => {
    const prompt = typeof final.prompt_eval_count === 'number' ? final.prompt_eval_count : 0;
    const completion = typeof final.eval_count === 'number' ? final.eval_count : 0;
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  };
  const finishOf = (final: Record<string, unknown>): string => (final.done_reason === 'length' ? 'length' : 'stop');
  return {
    json: (status, value) => {
      if (status !== 200 || value.done !== true) return sendJson(res, status, value);
      const message = (value.message ?? {}) as { content?: string; thinking?: string };
      sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model: value.model,
        system_fingerprint: 'fp_ollama',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: message.content ?? '', ...(message.thinking ? { reasoning: message.thinking } : {}) },
            finish_reason: finishOf(value),
          },
        ],
        usage: usageOf(value),
      });
    },
    line: async (value) => {
      if (value.error !== undefined) return event({ error: { message: String(value.error), type: 'api_error', param: null, code: null } });
      const message = (value.message ?? {}) as { content?: string; thinking?: string };
      if (value.done !== true) {
        const delta: Record<string, unknown> = roleSent ? {} : { role: 'assistant' };
        roleSent = true;
        delta.content = message.content ?? '';
        if (message.thinking) delta.reasoning = message.thinking;
        return event(chunk(value.model, delta, null));
      }
      await event(chunk(value.model, { role: 'assistant', content: '' }, finishOf(value)));
      if (opts.includeUsage) await event({ id, object: 'chat.completion.chunk', created, model: value.model, system_fingerprint: 'fp_ollama', choices: [], usage: usageOf(value) });
      await event('[DONE]');
    },
    end: () => res.end(),
    cut: () => {
      if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end();
    },
    drop: () => {
      if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      dropConnection(res);
    },
  };
}
