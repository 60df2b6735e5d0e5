import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderBenchHtml } from '../bench/html.js';
import { buildReport } from '../bench/report.js';
import { type IntegrityError, isConclaveError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { debateDocument } from '../render/document.js';
import { jsonText } from '../render/inert.js';
import { type DebateListEntry, debateListDocument } from '../render/list-document.js';
import { placeText } from '../render/place.js';
import { storedEvents } from '../render/replay.js';
import { listBenchRuns, loadBenchData, resolveBenchRunId } from '../store/bench.js';
import { glanceBenchRun } from '../store/bench-seal.js';
import { editedRecordError, readerFailure } from '../store/edited.js';
import { readRescoreRecords } from '../store/rescore-read.js';
import { describeProblem, renderChecked } from '../store/row-check.js';
import type { StoredDebate, Store } from '../store/store.js';
import { debatePage } from './debate-page.js';
import { EventCursor } from './events.js';
import { readLiveFile } from '../events/live-file.js';
import { errorPage } from './html.js';
import { filterFromQuery, listPage } from './list-page.js';
import { dataVersion, isStaleRunning, withLiveness } from './store.js';

export interface ViewerOptions {
  /** The record, opened read-only: the viewer never writes. */
  store: Store;
  /** When set, every request must carry it (bearer header, `?token=` once, then a cookie). */
  token?: string | null;
  /** How often a running debate's record is checked for new rows. Default 300 ms. */
  pollMs?: number;
  /** Where request failures are reported (the CLI passes stderr). */
  log?: (line: string) => void;
}

export interface Viewer {
  server: Server;
  /** Starts listening; resolves to the base URL (without the token). */
  listen(port: number, host: string): Promise<string>;
  close(): Promise<void>;
}

/** Debate and bench run ids: what `newDebateId` and the bench produce, or a prefix of one. */
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const COOKIE = 'conclave_token';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

interface Asset {
  body: Buffer;
  type: string;
}

function loadAssets(): Map<string, Asset> {
  const read = (name: string, type: string): [string, Asset] => [`/${name}`, { body: readFileSync(packagePath('viewer', name)), type }];
  const icon = read('favicon.svg', 'image/svg+xml');
  // Browsers ask for /favicon.ico on pages that name no icon (the bench report).
  return new Map([read('app.js', 'text/javascript; charset=utf-8'), read('style.css', 'text/css; charset=utf-8'), icon, ['/favicon.ico', icon[1]]]);
}

class NotFound extends Error {}

interface Watcher {
  id: string;
  res: ServerResponse;
  cursor: EventCursor;
  seq: number;
  /** When the debate's live file was last sent (0: none sent, or it was gone). */
  liveMtime: number;
}

export function createViewer(opts: ViewerOptions): Viewer {
  const { store } = opts;
  const token = opts.token ?? null;
  const pollMs = opts.pollMs ?? 300;
  const log = opts.log ?? (() => {});
  const assets = loadAssets();
  const watchers = new Set<Watcher>();
  let timer: NodeJS.Timeout | null = null;
  let lastVersion = -1;
  let ticks = 0;

  const headers = (type: string, extra: Record<string, string> = {}): Record<string, string> => ({
    'content-type': type,
    'content-security-policy': CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'cross-origin-resource-policy': 'same-origin',
    ...extra,
  });

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void => {
    res.writeHead(status, headers(type, extra));
    res.end(res.req.method === 'HEAD' ? undefined : body);
  };
  const sendHtml = (res: ServerResponse, status: number, body: string, extra: Record<string, string> = {}): void => send(res, status, 'text/html; charset=utf-8', body, extra);
  // The same bytes as the CLI's --json.
  const sendJson = (res: ServerResponse, value: unknown): void => send(res, 200, 'application/json; charset=utf-8', `${jsonText(value, 2)}\n`);

  /**
   * A debate rendered for a page, a document or an event stream. On a record that verifies but
   * holds values Conclave never writes (edited and sealed again), those are set aside and named in
   * the log (src/store/row-check.ts); an edit `verify` sees is named by the route's error page.
   */
  const renderStored = <T>(idOrPrefix: string, render: (d: StoredDebate) => T): T => {
    if (!ID.test(idOrPrefix)) throw new NotFound(`\`${idOrPrefix.slice(0, 80)}\` is not a debate id.`);
    let id: string;
    try {
      id = store.resolveId(idOrPrefix);
    } catch (err) {
      if (isConclaveError(err) && (err.code === 'DEBATE_NOT_FOUND' || err.code === 'DEBATE_ID_AMBIGUOUS')) throw new NotFound(err.message);
      throw err;
    }
    const shown = (d: StoredDebate): T => render(withLiveness(d));
    try {
      return shown(store.getDebate(id));
    } catch (err) {
      if (!readerFailure(err) || editedRecordError(store, id, err)) throw err;
      const { value, problems } = renderChecked(store, id, shown, err);
      for (const p of problems) log(`conclave serve: ${describeProblem(id, p)}`);
      return value;
    }
  };

  // A debate's page or document that failed on a hand-edited row says which row, as `verify` does.
  const editedDebate = (parts: string[], err: unknown): IntegrityError | null => {
    const [first, second, third] = parts;
    const shown = first === 'debates' ? second : first === 'api' && second === 'debates' ? third : undefined;
    if (shown === undefined || !ID.test(shown)) return null;
    try {
      return editedRecordError(store, store.resolveId(shown), err);
    } catch {
      return null;
    }
  };

  const listEntries = (): DebateListEntry[] =>
    debateListDocument(store, { limit: 1000 }).map((r) => (r.status === 'running' && isStaleRunning(store, r.id) ? { ...r, status: 'interrupted', exitReason: 'interrupted' } : r));

  const authorized = (req: IncomingMessage, url: URL): 'ok' | 'redirect' | 'no' => {
    if (token === null) return 'ok';
    const matches = (given: string | undefined | null): boolean => {
      if (!given) return false;
      const a = createHash('sha256').update(given).digest();
      const b = createHash('sha256').update(token).digest();
      return timingSafeEqual(a, b);
    };
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (matches(bearer)) return 'ok';
    const cookie = (req.headers.cookie ?? '')
      .split(';')
      .map((c) => c.trim().split('='))
      .find(([k]) => k === COOKIE)?.[1];
    if (matches(cookie)) return 'ok';
    if (matches(url.searchParams.get('token'))) return url.pathname.startsWith('/api/') ? 'ok' : 'redirect';
    return 'no';
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://viewer.invalid');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain; charset=utf-8', 'The viewer only reads: GET and HEAD.\n', { allow: 'GET, HEAD' });
      return;
    }
    // A page on loopback answers only to loopback names, so a web page elsewhere cannot
    // reach it through DNS rebinding. With a token, the token guards instead.
    if (token === null) {
      const hostName = (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
      if (!isLoopback(hostName)) {
        send(res, 403, 'text/plain; charset=utf-8', 'This viewer answers only at 127.0.0.1, localhost or [::1].\n');
        return;
      }
    }
    // A page of another site (another port of this machine too) may link to the viewer, but not have the
    // browser fetch its pages, data or stream in the background: those would be read in its name, and
    // each can take the viewer seconds on a large record. Browsers say where a request comes from.
    if (crossSiteFetch(req)) {
      send(res, 403, 'text/plain; charset=utf-8', 'The viewer answers only its own pages, and links opened from elsewhere.\n', { vary: 'sec-fetch-site, sec-fetch-mode' });
      return;
    }
    const auth = authorized(req, url);
    if (auth === 'no') {
      sendHtml(res, 401, errorPage(401, 'Token needed', 'This viewer listens beyond this machine and needs the token printed by `conclave serve`. Open the URL it printed (it ends in ?token=…) once; a cookie keeps you signed in.'), {
        'www-authenticate': 'Bearer realm="conclave"',
      });
      return;
    }
    if (auth === 'redirect') {
      url.searchParams.delete('token');
      res.writeHead(303, headers('text/plain; charset=utf-8', {
        // One leading slash: `//host` would send the browser elsewhere.
        location: `/${url.pathname.replace(/^\/+/, '')}${url.search}`,
        'set-cookie': `${COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict`,
      }));
      res.end();
      return;
    }

    let parts: string[];
    try {
      parts = url.pathname.split('/').filter((p) => p !== '').map((p) => decodeURIComponent(p));
    } catch {
      sendHtml(res, 404, errorPage(404, 'Not found', 'That address is not a page of the viewer.'));
      return;
    }
    try {
      route(parts, url, req, res);
    } catch (err) {
      if (err instanceof NotFound) {
        if (parts[0] === 'api') send(res, 404, 'application/json; charset=utf-8', `${JSON.stringify({ error: err.message })}\n`);
        else sendHtml(res, 404, errorPage(404, 'Not found', err.message));
        return;
      }
      const failure = editedDebate(parts, err) ?? err;
      const message = isConclaveError(failure) ? `${failure.message}${failure.hint ? ` ${failure.hint}` : ''}` : 'An internal error; the server log has the details.';
      log(`conclave serve: ${req.method} ${url.pathname}: ${failure instanceof Error ? failure.message : String(failure)}`);
      const edited = failure !== err || (isConclaveError(err) && err.code === 'BENCH_RUN_TAMPERED');
      if (res.headersSent) res.end();
      else sendHtml(res, 500, errorPage(500, edited ? 'The record was edited' : 'Could not read the record', message));
    }
  };

  const route = (parts: string[], url: URL, req: IncomingMessage, res: ServerResponse): void => {
    const [first, second, third, fourth] = parts;
    if (parts.length === 0) {
      const runs = listBenchRuns(store);
      // Each run in one snapshot, as `bench list` checks it.
      const seals = new Map(runs.map((r) => [r.id, store.read(`check the seal of bench run \`${r.id}\``, (s) => s.transaction(() => glanceBenchRun(s, r.id)).deferred())]));
      sendHtml(res, 200, listPage(listEntries(), runs, filterFromQuery(url.searchParams), store.path, seals));
      return;
    }
    if (parts.length === 1 && first !== undefined) {
      const asset = assets.get(`/${first}`);
      if (asset) {
        send(res, 200, asset.type, asset.body);
        return;
      }
    }
    if (first === 'debates' && second !== undefined && parts.length === 2) {
      const page = renderStored(second, (d) => {
        const exit = storedEvents(d).find((e) => e.type === 'debate.exit');
        return debatePage(d, exit?.type === 'debate.exit' ? exit.detail : null);
      });
      sendHtml(res, 200, page);
      return;
    }
    if (first === 'bench' && second !== undefined && parts.length === 2) {
      if (!ID.test(second)) throw new NotFound(`\`${second.slice(0, 80)}\` is not a bench run id.`);
      let runId: string;
      try {
        runId = resolveBenchRunId(store, second);
      } catch (err) {
        if (isConclaveError(err) && err.code.startsWith('BENCH_RUN_')) throw new NotFound(err.message);
        throw err;
      }
      const data = loadBenchData(store, runId);
      const records = readRescoreRecords(store, data.trials.flatMap((t) => (t.debateId === null ? [] : [t.debateId])));
      const report = renderBenchHtml(buildReport(data, { records }), { backTo: { href: '/', label: 'All debates and bench runs' } });
      // The report is one self-contained page with an inline stylesheet: allow exactly that one.
      const styles = [...report.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => `'sha256-${createHash('sha256').update(m[1] ?? '').digest('base64')}'`);
      sendHtml(res, 200, report, { 'content-security-policy': CSP.replace("style-src 'self'", `style-src 'self' ${styles.join(' ')}`) });
      return;
    }
    if (first === 'api' && second === 'debates') {
      if (parts.length === 2) {
        const status = url.searchParams.get('status');
        // As `list --json`: bench items only with bench=1 (`list --bench`), else the rest.
        const bench = url.searchParams.get('bench') === '1';
        const rows = listEntries().filter((r) => r.bench === bench && (!status || r.status === status));
        const limit = Number(url.searchParams.get('limit') ?? 50);
        sendJson(res, rows.slice(0, Number.isInteger(limit) && limit > 0 ? limit : 50));
        return;
      }
      if (third !== undefined && parts.length === 3) {
        sendJson(res, renderStored(third, debateDocument));
        return;
      }
      if (third !== undefined && fourth === 'events' && parts.length === 4) {
        // The events are made once here, so a row they cannot be made from is set aside before the stream starts.
        const d = renderStored(third, (stored) => {
          new EventCursor().next(stored);
          return stored;
        });
        streamEvents(d, req, res);
        return;
      }
    }
    throw new NotFound('That address is not a page of the viewer.');
  };

  const push = (w: Watcher, d: StoredDebate, events = w.cursor.next(d)): void => {
    for (const event of events) {
      // A call says where it sits in words, as the page's calls table does.
      const sent = event.type === 'call.finished' ? { ...event, call: { ...event.call, place: placeText(event.call.stage, event.call.round) } } : event;
      w.res.write(`id: ${++w.seq}\ndata: ${JSON.stringify(sent)}\n\n`);
    }
    if (d.status !== 'running') {
      w.res.end('event: end\ndata: {}\n\n');
      watchers.delete(w);
    }
  };

  const streamEvents = (d: StoredDebate, req: IncomingMessage, res: ServerResponse): void => {
    // Read before anything is sent: a record that cannot be read gets its error page, not an empty
    // stream that a browser's EventSource would open again every few seconds, for ever.
    const cursor = new EventCursor();
    const first = cursor.next(d);
    res.writeHead(200, headers('text/event-stream; charset=utf-8', { connection: 'keep-alive' }));
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    const w: Watcher = { id: d.id, res, cursor, seq: 0, liveMtime: 0 };
    watchers.add(w);
    req.on('close', () => {
      watchers.delete(w);
      if (watchers.size === 0) stopPolling();
    });
    push(w, d, first);
    if (watchers.has(w)) startPolling();
  };

  // The text each call of a running debate is writing, from the live file its process keeps.
  const pushStreams = (): void => {
    if (store.path === ':memory:') return;
    for (const w of watchers) {
      const live = readLiveFile(store.path, w.id);
      const mtime = live?.mtimeMs ?? 0;
      if (mtime === w.liveMtime) continue;
      w.liveMtime = mtime;
      w.res.write(`event: stream\ndata: ${JSON.stringify({ calls: live?.snapshot.calls ?? [] })}\n\n`);
    }
  };

  const poll = (): void => {
    ticks++;
    pushStreams();
    let version: number;
    try {
      version = dataVersion(store);
    } catch (err) {
      log(`conclave serve: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    // New rows, or now and then a look at whether a quiet debate's process is still alive.
    const changed = version !== lastVersion;
    if (!changed && ticks % Math.max(1, Math.round(5000 / pollMs)) !== 0) {
      if (ticks % Math.max(1, Math.round(15000 / pollMs)) === 0) for (const w of watchers) w.res.write(': keep-alive\n\n');
      return;
    }
    lastVersion = version;
    const byId = new Map<string, StoredDebate | null>();
    for (const w of [...watchers]) {
      if (!byId.has(w.id)) {
        try {
          byId.set(w.id, withLiveness(store.getDebate(w.id)));
        } catch (err) {
          log(`conclave serve: ${err instanceof Error ? err.message : String(err)}`);
          byId.set(w.id, null);
        }
      }
      const d = byId.get(w.id);
      if (!d) continue;
      try {
        push(w, d);
      } catch (err) {
        // A row edited by hand while the page watched: that stream ends (the page reloads and says what
        // changed, as verify does); the viewer serves on.
        const failure = editedRecordError(store, w.id, err) ?? err;
        log(`conclave serve: ${w.id}: ${failure instanceof Error ? failure.message : String(failure)}`);
        w.res.end('event: end\ndata: {}\n\n');
        watchers.delete(w);
      }
    }
    if (watchers.size === 0) stopPolling();
  };

  const startPolling = (): void => {
    if (timer) return;
    lastVersion = dataVersion(store);
    timer = setInterval(poll, pollMs);
  };
  const stopPolling = (): void => {
    if (timer) clearInterval(timer);
    timer = null;
  };

  const server = createServer(handle);
  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          resolve(`http://${shown}:${address.port}`);
        });
      }),
    close: () =>
      new Promise((resolve) => {
        stopPolling();
        for (const w of watchers) w.res.end();
        watchers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Whether a browser sent this request for a page of another origin, other than to open the viewer as
 * a document (a link, a bookmark). Clients that send no fetch metadata (curl, scripts) are not browsers.
 */
function crossSiteFetch(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site === undefined || site === 'same-origin' || site === 'none') return false;
  return !(req.headers['sec-fetch-mode'] === 'navigate' && req.headers['sec-fetch-dest'] === 'document');
}

/** Whether an address given to --listen stays on this machine. */
export function isLoopback(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  return a === 'localhost' || a === '::1' || /^127(\.\d{1,3}){3}$/.test(a);
}
