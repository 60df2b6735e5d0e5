import type { IncomingMessage, ServerResponse } from 'node:http';
import { complete } from './complete.js';
import { canonicalName } from './models.js';
import { openAIError, openAIWire, toOllamaChat } from './openai.js';
import { readBody } from './request.js';
import type { SimState } from './state.js';
import { sendJson } from './wire.js';

/** The OpenAI-compatible routes (/v1/models, /v1/chat/completions), as Ollama and vLLM serve them. */
export async function routeOpenAI(sim: SimState, req: IncomingMessage, res: ServerResponse, path: string, method: string, signal: AbortSignal): Promise<void> {
  const body = method === 'POST' ? await readBody(req, 'ChatCompletionRequest') : {};
  if (path === '/v1/chat/completions') sim.options.observe?.({ path, body, authorization: req.headers.authorization });
  if (sim.options.apiKey !== undefined && req.headers.authorization !== `Bearer ${sim.options.apiKey}`) {
    return openAIError(res, 401, 'Incorrect API key provided.', 'invalid_api_key');
  }
  if (path === '/v1/models' && method === 'GET') {
    const created = Math.floor(sim.startedAt.getTime() / 1000);
    return sendJson(res, 200, {
      object: 'list',
      data: [...sim.models.values()].map((spec) => ({
        id: spec.canonical,
        object: 'model',
        created,
        owned_by: sim.options.api === 'openai' ? 'vllm' : 'library',
        ...(sim.options.api === 'openai' ? { max_model_len: spec.contextLength } : {}),
      })),
    });
  }
  if (path === '/v1/chat/completions' && method === 'POST') {
    const { chat, includeUsage } = toOllamaChat(body);
    if (typeof chat.model === 'string' && !sim.models.has(canonicalName(chat.model))) {
      return openAIError(res, 404, `The model \`${chat.model}\` does not exist.`, 'model_not_found');
    }
    return complete(sim, 'chat', chat, openAIWire(res, { includeUsage: includeUsage && sim.options.sendsUsage !== false }), signal);
  }
  return openAIError(res, 404, `route ${method} ${path} not found`);
}
