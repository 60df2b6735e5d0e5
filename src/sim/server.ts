import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { complete } from './complete.js';
import { ps, show, tags } from './info.js';
import { toSpec } from './models.js';
import { OpenAIRequestError, openAIError } from './openai.js';
import { routeOpenAI } from './openai-routes.js';
import { HttpError, readBody } from './request.js';
import { type ModelSpec, Scheduler } from './scheduler.js';
import type { SimCounters, SimHandle, SimOptions } from './sim-types.js';
import type { SimState } from './state.js';
import { ollamaWire, sendJson } from './wire.js';

export type * from './sim-types.js';
export { canonicalName, familyByName } from './models.js';
export { parseGoDuration } from './request.js';
export { splitIntoChunks, thinkingText } from './stream.js';

const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;

/**
 * Starts an HTTP server on 127.0.0.1 that speaks Ollama's API closely enough
 * for the real `ollama` client: streamed NDJSON, errors with Ollama's statuses
 * and texts, and a scheduler with slots, serialized loads, VRAM-driven
 * eviction and option-driven reloads.
 */
export async function startSimulator(options: SimOptions): Promise<SimHandle> {
  const sim = new Simulator(options);
  return sim.listen(options.port ?? 0);
}

class Simulator implements SimState {
  readonly models = new Map<string, ModelSpec>();
  readonly scheduler: Scheduler;
  private readonly server = createServer((req, res) => void this.handle(req, res));
  private readonly live = new Set<AbortController>();
  private readonly sockets = new Set<Socket>();
  /** Killed: nothing more is written, as from a process that is gone. */
  private dead = false;
  /** Settles once an unplugged server has no connection left. */
  private unplugged: Promise<void> | null = null;
  private readonly modelCalls = new Map<string, number>();
  readonly startedAt = new Date();
  private calls = 0;

  constructor(readonly options: SimOptions) {
    for (const model of options.models) {
      const spec = toSpec(model);
      this.models.set(spec.canonical, spec);
    }
    // A vLLM or llama-server process holds its models from start to end: nothing loads or evicts.
    const resident = options.api === 'openai';
    this.scheduler = new Scheduler({
      vramBytes: resident ? Number.POSITIVE_INFINITY : (options.vramBytes ?? Number.POSITIVE_INFINITY),
      numParallel: Math.max(1, options.numParallel ?? 1),
      maxLoadedModels: resident ? Math.max(1, options.models.length) : (options.maxLoadedModels ?? 3),
      maxQueue: options.maxQueue ?? 512,
      loadMs: resident ? 0 : (options.loadMs ?? 0),
      defaultKeepAliveMs: DEFAULT_KEEP_ALIVE_MS,
    });
    for (const spec of this.models.values()) this.scheduler.stats(spec);
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  listen(port: number): Promise<SimHandle> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        const { port: bound } = this.server.address() as AddressInfo;
        resolve({
          url: `http://127.0.0.1:${bound}`,
          port: bound,
          counters: () => this.counters(),
          resetCounters: () => this.scheduler.resetCounters(),
          loaded: () => this.scheduler.loadedNames(),
          kill: () => this.kill(),
          close: () => this.close(),
        });
      });
    });
  }

  private counters(): SimCounters {
    const { requests, perModel } = this.scheduler.counters();
    let loads = 0;
    let reloads = 0;
    let evictions = 0;
    for (const stats of Object.values(perModel)) {
      loads += stats.loads;
      reloads += stats.reloads;
      evictions += stats.evictions;
    }
    return { requests, loads, reloads, evictions, perModel };
  }

  private close(): Promise<void> {
    this.scheduler.close();
    for (const controller of this.live) controller.abort();
    if (!this.server.listening) {
      this.server.closeAllConnections();
      return this.unplugged ?? Promise.resolve();
    }
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  unplug(): void {
    if (!this.server.listening) return;
    this.unplugged = new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  kill(): Promise<void> {
    this.dead = true;
    const closed = new Promise<void>((resolve) => (this.server.listening ? this.server.close(() => resolve()) : resolve()));
    this.scheduler.close();
    for (const socket of this.sockets) {
      // Queued after what the replies wrote, so a reply cut by the crash arrives as far as it got, then the reset.
      socket.write('', () => socket.resetAndDestroy());
    }
    for (const controller of this.live) controller.abort();
    return closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController();
    this.live.add(controller);
    // 'close' before the response ended means the client went away.
    res.on('close', () => {
      this.live.delete(controller);
      if (!res.writableEnded) controller.abort();
    });
    try {
      // A host without power answers nothing, on a connection it had already taken either.
      if (this.unplugged) {
        await new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
        return;
      }
      await this.route(req, res, controller.signal);
    } catch (error) {
      if (res.destroyed || this.dead) return;
      if (res.headersSent) {
        res.end();
        return;
      }
      const status = error instanceof HttpError || error instanceof OpenAIRequestError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof HttpError && error.retryAfter !== undefined) res.setHeader('Retry-After', String(error.retryAfter));
      if ((req.url ?? '').startsWith('/v1/')) openAIError(res, status, message);
      else sendJson(res, status, { error: message });
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const method = req.method ?? 'GET';
    const read = method === 'GET' || method === 'HEAD';
    if (path.startsWith('/v1/')) return routeOpenAI(this, req, res, path, method, signal);
    if (this.options.api === 'openai') {
      if (path === '/props' && method === 'GET') return sendJson(res, 200, { total_slots: Math.max(1, this.options.numParallel ?? 1), model_path: [...this.models.keys()][0] ?? '' });
      return openAIError(res, 404, `route ${method} ${path} not found`);
    }
    if (path === '/' && read) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(method === 'HEAD' ? undefined : 'Ollama is running');
      return;
    }
    if (path === '/api/version' && read) return sendJson(res, 200, { version: this.options.version ?? '0.13.0' });
    if (path === '/api/tags' && read) return sendJson(res, 200, tags(this));
    if (path === '/api/ps' && method === 'GET') return sendJson(res, 200, ps(this));
    if (method === 'POST' && path === '/api/show') return sendJson(res, 200, show(this, await readBody(req, 'ShowRequest')));
    if (method === 'POST' && path === '/api/chat') {
      return complete(this, 'chat', await readBody(req, 'ChatRequest'), ollamaWire(res), signal);
    }
    if (method === 'POST' && path === '/api/generate') {
      return complete(this, 'generate', await readBody(req, 'GenerateRequest'), ollamaWire(res), signal);
    }
    // Gin's answer for unknown routes and methods.
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('404 page not found');
  }

  count(model: string): { index: number; modelIndex: number } {
    const modelIndex = this.modelCalls.get(model) ?? 0;
    this.modelCalls.set(model, modelIndex + 1);
    return { index: this.calls++, modelIndex };
  }
}
