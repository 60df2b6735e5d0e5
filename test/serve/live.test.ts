import { hostname } from 'node:os';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import type { SimRequest } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { scriptedResponder, stageOf } from '../helpers/panel.js';
import { recordDebate, type RunningViewer, startViewer, tempRecord } from '../helpers/viewer.js';

let v: RunningViewer | null = null;
afterEach(async () => {
  await v?.close();
  v = null;
});

/** A gate the simulator waits on before answering the synthesis call. */
function gated() {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const script = scriptedResponder([0.4, 0.9]);
  const respond = async (req: SimRequest) => {
    if (stageOf(req) === 'synthesis') await gate;
    return script.respond(req);
  };
  return { respond, open };
}

/** Reads an event stream as it arrives, calling `onEvent` for each payload; resolves at its end. */
async function follow(url: string, onEvent: (e: DebateEvent) => void): Promise<boolean> {
  const res = await fetch(url);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return false;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (block.split('\n').includes('event: end')) return true;
      for (const line of block.split('\n')) if (line.startsWith('data: ')) onEvent(JSON.parse(line.slice(6)) as DebateEvent);
    }
  }
}

describe('the event stream of a running debate', () => {
  it('streams turns as another connection records them, then the end, each event once', async () => {
    const file = tempRecord();
    const { respond, open } = gated();
    let id = '';
    const started = new Promise<void>((resolve) => {
      void recordDebate(file, respond, { tokenMs: 2, onStart: (debateId) => ((id = debateId), resolve()) });
    });
    await started;
    v = await startViewer(file);
    const seen: DebateEvent[] = [];
    let turnsBeforeSynthesis = -1;
    const ended = follow(`${v.url}/api/debates/${id}/events`, (e) => {
      seen.push(e);
      // The judge's last round is in (3 agents × rounds 0 and 1), and the synthesis is still held.
      if (turnsBeforeSynthesis < 0 && e.type === 'round.judged' && e.judgement.round === 1) {
        turnsBeforeSynthesis = seen.filter((x) => x.type === 'turn.finished').length;
        expect(seen.some((x) => x.type === 'debate.finished' || x.type === 'synthesis.finished')).toBe(false);
        open();
      }
    });
    expect(await ended).toBe(true);
    expect(turnsBeforeSynthesis).toBe(6);

    const store = openStore(file);
    const d = store.getDebate(id);
    store.close();
    expect(d.status).toBe('completed');
    expect(seen.at(-1)).toMatchObject({ type: 'debate.finished', status: 'completed' });
    expect(seen.filter((e) => e.type === 'debate.finished')).toHaveLength(1);
    expect(seen.filter((e) => e.type === 'synthesis.finished')).toHaveLength(1);
    const turns = seen.flatMap((e) => (e.type === 'turn.finished' ? [e.turn] : []));
    expect(turns).toHaveLength(d.turns.length);
    expect(new Set(turns.map((t) => `${t.round}/${t.agentId}`)).size).toBe(d.turns.length);
    const callIds = seen.flatMap((e) => (e.type === 'call.finished' ? [(e.call as unknown as { id: number }).id] : []));
    expect(new Set(callIds).size).toBe(callIds.length);
  });

  it('ends the stream of a debate whose process died, as interrupted', async () => {
    const file = tempRecord();
    const id = await recordDebate(file, scriptedResponder([0.4, 0.9]).respond);
    // As if the runner had been killed mid-debate: still `running`, under a pid that is gone.
    const writer = openStore(file);
    writer.use('fake a dead runner', (_db, sqlite) => sqlite.prepare("update debates set status = 'running', exit_reason = null, pid = 2147483646 where id = ?").run(id));
    writer.close();
    v = await startViewer(file);
    const seen: DebateEvent[] = [];
    expect(await follow(`${v.url}/api/debates/${id}/events`, (e) => seen.push(e))).toBe(true);
    expect(seen.at(-1)).toMatchObject({ type: 'debate.finished', status: 'interrupted' });
    const list = (await (await fetch(`${v.url}/api/debates`)).json()) as { id: string; status: string }[];
    expect(list.find((r) => r.id === id)?.status).toBe('interrupted');
  });

  it('ends the stream of a running debate whose record is edited by hand while watched, and serves on', async () => {
    const file = tempRecord();
    const id = await recordDebate(file, scriptedResponder([0.4, 0.9]).respond);
    // Still running, in a process that is alive (this one).
    const writer = new Database(file);
    writer.prepare("update debates set status = 'running', finished_at = null, pid = ?, hostname = ? where id = ?").run(process.pid, hostname(), id);
    v = await startViewer(file);
    let edited = false;
    const ended = await follow(`${v.url}/api/debates/${id}/events`, () => {
      if (edited) return;
      edited = true;
      // As someone with `sqlite3` would, while the page follows the debate.
      writer.prepare("update debates set preset_json = 'null', exit_detail = null where id = ?").run(id);
    });
    writer.close();
    expect(edited).toBe(true);
    expect(ended).toBe(true);
    const page = await fetch(`${v.url}/debates/${id}`);
    expect(page.status).toBe(500);
    const text = await page.text();
    expect(text).toContain('The record was edited');
    expect(text).toContain('a `debates` row');
    expect((await fetch(`${v.url}/`)).status).toBe(200);
  });

  it('answers the event stream of a running debate edited by hand with the error page, not an empty stream a browser opens again', async () => {
    const file = tempRecord();
    const id = await recordDebate(file, scriptedResponder([0.4, 0.9]).respond);
    const writer = new Database(file);
    writer.prepare("update debates set status = 'running', finished_at = null, pid = ?, hostname = ?, preset_json = 'null', exit_detail = null where id = ?").run(process.pid, hostname(), id);
    writer.close();
    v = await startViewer(file);
    const res = await fetch(`${v.url}/api/debates/${id}/events`);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).not.toContain('text/event-stream');
    const text = await res.text();
    expect(text).toContain('The record was edited');
    expect(text).toContain('a `debates` row');
  });
});
