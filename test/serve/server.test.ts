import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { storedEvents } from '../../src/render/replay.js';
import { READ_COMPATIBLE } from '../../src/store/migrations-journal.js';
import { openStoreReadOnly, openViewerStore } from '../../src/serve/store.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';
import { setupBench } from '../bench/fixture.js';
import { scriptedResponder, stageOf } from '../helpers/panel.js';
import { readEventStream, recordDebate, type RunningViewer, startViewer, tempRecord } from '../helpers/viewer.js';

const cli = (args: string[]) => runCli(args, process.cwd());

let file = '';
let first = '';
let second = '';
let benchRun = '';
let v: RunningViewer;

beforeAll(async () => {
  file = tempRecord();
  first = await recordDebate(file, scriptedResponder([0.4, 0.9]).respond, { question: 'Should we keep SQLite?' });
  second = await recordDebate(file, scriptedResponder([0.3, 0.5, 0.6]).respond, { question: 'Should we move to Postgres?' });
  const bench = await setupBench({ dbPath: file });
  try {
    benchRun = await bench.start({ limit: 1 });
  } finally {
    await bench.close();
  }
  v = await startViewer(file);
});

afterAll(async () => {
  await v?.close();
});

describe('conclave serve (HTTP)', () => {
  it('serves exactly the documents that list --json and show --json print', async () => {
    const list = await cli(['list', '--json', '--db', file]);
    expect(await (await fetch(`${v.url}/api/debates`)).json()).toEqual(JSON.parse(list.stdout));
    const show = await cli(['show', second, '--json', '--db', file]);
    expect(await (await fetch(`${v.url}/api/debates/${second}`)).json()).toEqual(JSON.parse(show.stdout));
  });

  it('lists debates newest first and filters them by status, preset and text without script', async () => {
    const page = await (await fetch(`${v.url}/`)).text();
    expect(page.indexOf(second)).toBeGreaterThan(0);
    expect(page.indexOf(second)).toBeLessThan(page.indexOf(first));
    const byText = await (await fetch(`${v.url}/?q=postgres`)).text();
    expect(byText).toContain(second);
    expect(byText).not.toContain(`/debates/${first}`);
    const byStatus = await (await fetch(`${v.url}/?status=failed`)).text();
    expect(byStatus).toContain('No debate matches the filter.');
    const byPreset = await (await fetch(`${v.url}/?preset=test-panel`)).text();
    expect(byPreset).toContain(first);
    expect(byPreset).toContain(second);
  });

  it('sends a strict Content-Security-Policy and serves its script and stylesheet itself', async () => {
    const res = await fetch(`${v.url}/debates/${first}`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await res.text();
    // Nothing inline, nothing fetched from elsewhere.
    expect(html).not.toMatch(/<script>|<style|style="/);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).toContain('<script src="/app.js" defer></script>');
    expect((await fetch(`${v.url}/app.js`)).headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${v.url}/style.css`)).headers.get('content-type')).toContain('text/css');
  });

  it('answers unknown and malformed ids with a 404 page, and unknown addresses too', async () => {
    for (const path of ['/debates/261122-000000-dead', '/debates/..%2F..%2Fetc', '/debates/%3Cscript%3E', '/nothing/here', '/api/debates/nope']) {
      const res = await fetch(`${v.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(await res.text()).not.toContain('<script>');
    }
    const page = await (await fetch(`${v.url}/debates/%3Cimg%20src%3Dx%3E`)).text();
    expect(page).not.toContain('<img');
  });

  it('serves the bench report that `bench report --format html` writes, allowing exactly its own stylesheet', async () => {
    const report = await cli(['bench', 'report', benchRun, '--format', 'html', '--db', file]);
    const res = await fetch(`${v.url}/bench/${benchRun}`);
    expect(res.status).toBe(200);
    // The same report, with a way back to the list that a file written by `bench report` has no use for.
    const served = await res.text();
    const back = '<nav class="back"><a href="/">← All debates and bench runs</a></nav>\n';
    expect(served).toContain(back);
    expect(report.stdout).not.toContain('<nav class="back">');
    expect(served.replace(back, '')).toBe(report.stdout);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/style-src 'self' 'sha256-[\w+/=]+'/);
    expect(csp).not.toContain('unsafe-inline');
    expect(await (await fetch(`${v.url}/`)).text()).toContain(`href="/bench/${benchRun}"`);
    expect((await fetch(`${v.url}/bench/b000000-000000-0000`)).status).toBe(404);
  });

  it('keeps bench items out of the list until asked, saying how many there are', async () => {
    const benchIds = ((await (await fetch(`${v.url}/api/debates?limit=1000&bench=1`)).json()) as { id: string }[]).map((r) => r.id);
    expect(benchIds.length).toBeGreaterThan(0);
    const page = await (await fetch(`${v.url}/`)).text();
    expect(page).toContain(`${benchIds.length} debate${benchIds.length === 1 ? '' : 's'} run as bench items`);
    for (const id of benchIds) expect(page).not.toContain(`/debates/${id}"`);
    const shown = await (await fetch(`${v.url}/?bench=1`)).text();
    for (const id of benchIds) expect(shown).toContain(`/debates/${id}"`);
    // The bench runs stay on the first screen either way.
    expect(page).toContain('id="bench-runs"');
  });

  it('accepts a unique prefix of a debate id, as the other commands do', async () => {
    // Every debate, bench items included (listed apart with bench=1).
    const ids = [
      ...((await (await fetch(`${v.url}/api/debates?limit=1000`)).json()) as { id: string }[]),
      ...((await (await fetch(`${v.url}/api/debates?limit=1000&bench=1`)).json()) as { id: string }[]),
    ].map((r) => r.id);
    // The shortest prefix that names it alone: bench trials share its timestamp.
    const length = [...Array(second.length).keys()].find((n) => n >= 8 && ids.filter((id) => id.startsWith(second.slice(0, n))).length === 1) ?? second.length;
    expect(length).toBeLessThan(second.length);
    const res = await fetch(`${v.url}/debates/${second.slice(0, length)}`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('Should we move to Postgres?');
  });

  it('only reads: other methods are refused and the file is unchanged after serving every page', async () => {
    expect((await fetch(`${v.url}/api/debates/${first}`, { method: 'POST' })).status).toBe(405);
    const before = createHash('sha256').update(readFileSync(file)).digest('hex');
    for (const path of ['/', `/debates/${first}`, `/api/debates/${second}`, `/api/debates/${first}/events`]) await (await fetch(`${v.url}${path}`)).text();
    expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(before);
  });

  it('opens the record with a handle that cannot write', () => {
    const store = openStoreReadOnly(file);
    try {
      expect(() => store.finishDebate(first, { status: 'failed', exitReason: 'error', error: 'x', roundsCompleted: 0, finalConvergence: null, finishedAt: 0 })).toThrow(/readonly|read-only/i);
    } finally {
      store.close();
    }
  });

  it('refuses requests whose Host is not a loopback name, so DNS rebinding cannot reach it', async () => {
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${v.url}/api/debates`, { headers: { host: 'attacker.example:80' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });

  it('replays a finished debate as its stored events over Server-Sent Events, then ends', async () => {
    const stream = await readEventStream(`${v.url}/api/debates/${first}/events`);
    expect(stream.ended).toBe(true);
    const store = openStore(file);
    try {
      const d = store.getDebate(first);
      // The replay's events, in order, plus every call for the calls table.
      const isCall = (e: unknown) => (e as { type: string }).type === 'call.finished';
      expect(stream.data.filter((e) => !isCall(e))).toEqual(JSON.parse(JSON.stringify(storedEvents(d).filter((e) => !isCall(e)))));
      const callIds = stream.data.filter(isCall).map((e) => (e as { call: { id: number } }).call.id);
      expect(callIds.sort((a, b) => a - b)).toEqual(d.calls.map((c) => c.id));
    } finally {
      store.close();
    }
  });
});

describe('a debate with a reply of a few hundred thousand characters', () => {
  it('shows the first 100,000 characters on its page, says how many more there are, and keeps them all in the JSON document', async () => {
    const long = `${'x'.repeat(299_991)}TAIL-MARK`;
    const record = tempRecord();
    const id = await recordDebate(record, scriptedResponder([0.9]).respond);
    // A record can hold any text (one handed over by someone else too): a reply is made long here.
    const writer = new Database(record);
    writer.prepare('update calls set raw = ? where id = (select min(id) from calls where debate_id = ?)').run(long, id);
    writer.close();
    const viewer = await startViewer(record);
    try {
      const page = await (await fetch(`${viewer.url}/debates/${id}`)).text();
      expect(page).toContain('x'.repeat(99_000));
      expect(page).not.toContain('TAIL-MARK');
      expect(page).toContain(`… 200,000 more characters, left off this page: the whole text is in <a href="/api/debates/${id}">the debate's JSON document</a>.`);
      expect(page.length).toBeLessThan(300_000);
      const doc = (await (await fetch(`${viewer.url}/api/debates/${id}`)).json()) as { calls: { raw: string }[] };
      expect(doc.calls.some((c) => c.raw === long)).toBe(true);
    } finally {
      await viewer.close();
    }
  });
});

describe('a debate whose synthesis failed', () => {
  it('shows the failure, the attempts and how to try again', async () => {
    const failing = tempRecord();
    const id = await recordDebate(failing, scriptedResponder([0.4, 0.9], (req) => (stageOf(req) === 'synthesis' ? { error: 'model crashed', status: 500 } : undefined)).respond);
    const viewer = await startViewer(failing);
    try {
      const page = await (await fetch(`${viewer.url}/debates/${id}`)).text();
      expect(page).toContain('status-unsynthesized');
      expect(page).toContain(`conclave synthesize ${id}`);
      expect(page).toMatch(/synthesis attempt/);
    } finally {
      await viewer.close();
    }
  });
});

describe('a record older than this version', () => {
  it('is refused by the live read-only connection and shown as a snapshot instead, with a warning', () => {
    // A record made by the migrations of an earlier version: it lacks the newest migration a reader must apply.
    const folder = mkdtempSync(join(tmpdir(), 'conclave-old-migrations-'));
    cpSync(packagePath('migrations'), folder, { recursive: true });
    const journalFile = join(folder, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: { tag: string }[] };
    while (READ_COMPATIBLE.has(journal.entries.at(-1)!.tag)) journal.entries.pop();
    journal.entries.pop();
    writeFileSync(journalFile, JSON.stringify(journal));
    const old = join(mkdtempSync(join(tmpdir(), 'conclave-old-')), 'record.db');
    const sqlite = new Database(old);
    migrate(drizzle(sqlite), { migrationsFolder: folder });
    sqlite.close();

    const before = createHash('sha256').update(readFileSync(old)).digest('hex');
    expect(() => openStoreReadOnly(old)).toThrow(/older version of Conclave/);
    const warnings: string[] = [];
    const store = openViewerStore(old, (line) => warnings.push(line));
    try {
      expect(store.listDebates()).toEqual([]);
      expect(warnings.join('\n')).toContain('will not follow debates recorded from here on');
    } finally {
      store.close();
    }
    expect(createHash('sha256').update(readFileSync(old)).digest('hex')).toBe(before);
  });
});

describe('conclave serve with a token', () => {
  let t: RunningViewer;
  beforeAll(async () => {
    t = await startViewer(file, 'secret-token-123');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a request without the token', async () => {
    const res = await fetch(`${t.url}/api/debates`);
    expect(res.status).toBe(401);
    expect((await fetch(`${t.url}/debates/${first}`)).status).toBe(401);
    expect((await fetch(`${t.url}/api/debates`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
  });

  it('accepts the bearer header, and trades ?token= once for a cookie and a clean address', async () => {
    expect((await fetch(`${t.url}/api/debates`, { headers: { authorization: 'Bearer secret-token-123' } })).status).toBe(200);
    const res = await fetch(`${t.url}/debates/${first}?token=secret-token-123`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/debates/${first}`);
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(res.headers.get('set-cookie')).toMatch(/HttpOnly/);
    expect((await fetch(`${t.url}/debates/${first}`, { headers: { cookie } })).status).toBe(200);
  });
});

describe('conclave serve (command)', () => {
  it('refuses a record that does not exist, naming it, with exit code 4', async () => {
    const r = await cli(['serve', '--db', `${file}.missing`]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('There is no database at');
  });

  it('refuses a port out of range with exit code 2', async () => {
    const r = await cli(['serve', '--db', file, '--port', '70000']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--port must be a whole number from 0 to 65535; got 70000.');
  });

  it('on a non-loopback address warns, prints a token URL and refuses requests without it', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', packagePath('src', 'cli', 'entry.ts'), 'serve', '--db', file, '--listen', '0.0.0.0', '--port', '0'], {
      cwd: packagePath(),
      env: { ...process.env, CI: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(out.trim());
        });
        child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
      });
      const url = new URL(line);
      expect(url.searchParams.get('token')).toMatch(/^[\w-]{20,}$/);
      expect(stderr).toContain('Warning: listening on 0.0.0.0');
      // An address a colleague can open: one of this machine's, or its name; never 0.0.0.0.
      const { hostname, networkInterfaces } = await import('node:os');
      const own = Object.values(networkInterfaces()).flatMap((l) => l ?? []).filter((i) => !i.internal && i.family === 'IPv4').map((i) => i.address);
      expect(url.hostname).not.toBe('0.0.0.0');
      expect([...own, hostname()]).toContain(url.hostname);
      const base = `http://127.0.0.1:${url.port}`;
      expect((await fetch(`${base}/api/debates`)).status).toBe(401);
      expect((await fetch(`${base}/api/debates?token=${url.searchParams.get('token')}`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('call rows', () => {
  it('show a call cancelled by Ctrl-C as cancelled, not as a failure', async () => {
    const { callRows } = await import('../../src/serve/debate-page.js');
    const call = { id: 3, debateId: 'd', stage: 'critique', round: 1, agentId: 'a', attempt: 0, host: 'h', model: 'm', messages: [], options: {}, format: null, raw: '', parsed: null, status: 'aborted', validationError: null, error: 'CALL_ABORTED: The call to m was stopped.', truncation: null, metrics: { promptTokens: null, completionTokens: null, totalDurationNs: null, loadDurationNs: null, promptEvalDurationNs: null, evalDurationNs: null, doneReason: null }, startedAt: 0, finishedAt: 0 } as const;
    const row = String(callRows(call as never, 0));
    expect(row).toContain('>cancelled</span>');
    expect(row).not.toMatch(/>aborted<|>failed</);
  });
});
