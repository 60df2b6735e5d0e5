import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startViewer } from '../helpers/viewer.js';

const cli = (args: string[]) => runCli(args, dir);

let dir = '';
let db = '';
let id = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-edited-'));
  db = join(dir, 'record.db');
  const r = await cli(['demo', '--preset', 'tech-decision', '--db', db, '--json', '--token-ms', '0']);
  expect(r.code).toBe(0);
  id = (JSON.parse(r.stdout) as { id: string }).id;
}, 120_000);

/** A copy of the record with one statement run on it, as someone with `sqlite3` would. */
function edited(name: string, statement: string): string {
  const copy = join(dir, `${name}.db`);
  const s = new Database(db);
  s.prepare('vacuum into ?').run(copy);
  s.close();
  const c = new Database(copy);
  c.prepare(statement).run(id);
  c.close();
  return copy;
}

// Each edit is one that `verify` names; readers used to exit 70 (internal error) or 4 ("check the disk") on them.
const edits: { name: string; statement: string; row: string }[] = [
  { name: 'reply-json', statement: "update calls set parsed_json = '{bad' where id = (select min(id) from calls where debate_id = ?)", row: 'call 1 of' },
  { name: 'turn-json', statement: "update turns set body_json = '{bad' where debate_id = ? and round = 0", row: 'a `turns` row' },
  { name: 'synthesis-shape', statement: `update syntheses set body_json = '{"x":1}' where debate_id = ?`, row: 'a `syntheses` row (-)' },
  { name: 'preset-null', statement: "update debates set preset_json = 'null' where id = ?", row: 'a `debates` row' },
  { name: 'map-shape', statement: `update tension_maps set major_findings_json = '{"a":1}' where debate_id = ?`, row: 'a `tension_maps` row (-)' },
  { name: 'step-shape', statement: "update protocol_steps set body_json = '7' where debate_id = ?", row: 'a `protocol_steps` row' },
];

describe('readers of a hand-edited record', () => {
  for (const edit of edits) {
    it(`name the edited row (${edit.name}) as verify does, exit 6, and print no internal error`, async () => {
      const copy = edited(edit.name, edit.statement);
      const verify = await cli(['verify', id, '--db', copy]);
      expect(verify.code).toBe(6);
      let stopped = 0;
      for (const args of [['show', id], ['show', id, '--json'], ['export', id, '--format', 'md'], ['export', id, '--format', 'json'], ['replay', id]]) {
        const r = await cli([...args, '--db', copy]);
        if (r.code === 0) continue; // this reader does not read the edited column: it shows the debate
        expect({ args, code: r.code }).toEqual({ args, code: 6 });
        stopped++;
        expect(r.stderr).toContain(`Debate \`${id}\` cannot be read: it does not match its hashes`);
        expect(r.stderr).toContain(edit.row);
        expect(r.stderr).toContain(`conclave verify ${id}`);
        expect(r.stderr).not.toContain('internal error');
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
      // The edit breaks at least one reader, so the message above was checked.
      expect(stopped).toBeGreaterThan(0);
    });
  }

  it('still shows an edited debate whose edit the reader can render, and verify names it', async () => {
    const copy = edited('raw', "update calls set raw = 'x' where id = (select min(id) from calls where debate_id = ?)");
    expect((await cli(['show', id, '--db', copy])).code).toBe(0);
    expect((await cli(['verify', id, '--db', copy])).code).toBe(6);
  });

  it('gives the viewer a page that names the edited row instead of an internal error', async () => {
    const copy = edited('viewer', `update syntheses set body_json = '{"x":1}' where debate_id = ?`);
    const v = await startViewer(copy);
    try {
      const res = await fetch(`${v.url}/debates/${id}`);
      expect(res.status).toBe(500);
      const page = await res.text();
      expect(page).toContain('The record was edited');
      expect(page).toContain('a `syntheses` row (-)');
      expect(page).not.toContain('An internal error');
    } finally {
      await v.close();
    }
  });
});

describe('the list of a record with one hand-edited debate', () => {
  it('lists every debate, showing the edited values as `?`, in the terminal and in the viewer', async () => {
    const copy = edited('list', `update debates set created_at = 'yesterday', final_convergence = 'high', question = x'ff' where id = ?`);
    const r = await cli(['list', '--db', copy]);
    expect(r.stderr).not.toContain('internal error');
    expect(r.code).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.startsWith(id));
    expect(line?.split(/\s{2,}/)).toEqual([id, '?', 'completed', '2', '?', 'tech-decision', '?']);
    const v = await startViewer(copy);
    try {
      const res = await fetch(`${v.url}/`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain(`/debates/${id}`);
    } finally {
      await v.close();
    }
  });
});

describe('commands that go on from a hand-edited record', () => {
  it('rescore names the edited row instead of an internal error', async () => {
    const copy = edited('rescore', "update debates set preset_json = 'null' where id = ?");
    const r = await cli(['rescore', id, '--db', copy]);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('a `debates` row');
    expect(r.stderr).not.toContain('internal error');
  });

  it('resume refuses at the seal gate, naming the edit, before reading the record, and writes nothing', async () => {
    const copy = edited('resume', "update debates set status = 'interrupted', exit_reason = 'interrupted', preset_json = 'null' where id = ?");
    const before = new Database(copy, { readonly: true });
    const calls = (before.prepare('select count(*) as n from calls').get() as { n: number }).n;
    before.close();
    // No server is ever asked: the gate refuses first.
    const r = await cli(['resume', id, '--db', copy, '--host', 'http://127.0.0.1:9']);
    expect(r.stderr).not.toContain('internal error');
    expect(r.code).toBe(6);
    expect(r.stderr).toContain(`Debate \`${id}\` does not match its hashes (a \`debates\` row`);
    const after = new Database(copy, { readonly: true });
    expect((after.prepare('select count(*) as n from calls').get() as { n: number }).n).toBe(calls);
    expect((after.prepare('select count(*) as n from resumptions').get() as { n: number }).n).toBe(0);
    after.close();
  });
});

describe('a record whose seal digests were damaged', () => {
  it('verifies, as the digests only name rows, and so reads in show, export and replay', async () => {
    const copy = edited('digests', "update debates set seal_rows_json = '{bad' where id = ?");
    expect((await cli(['verify', id, '--db', copy])).code).toBe(0);
    for (const args of [['show', id], ['export', id, '--format', 'json'], ['replay', id]]) {
      const r = await cli([...args, '--db', copy]);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }
  });
});

describe('verify without --public-key on a signed record', () => {
  it('says the seal names a key whose signature it did not check, and how to check it', async () => {
    const keys = join(dir, 'keys');
    expect((await cli(['keys', 'init', '--out', keys])).code).toBe(0);
    const signedDb = join(dir, 'signed.db');
    const run = await cli(['demo', '--preset', 'tech-decision', '--db', signedDb, '--json', '--token-ms', '0', '--sign-key', join(keys, 'conclave-seal.key')]);
    expect(run.code).toBe(0);
    const signedId = (JSON.parse(run.stdout) as { id: string }).id;
    const s = new Database(signedDb, { readonly: true });
    const key = (s.prepare('select seal_key from debates where id = ?').get(signedId) as { seal_key: string }).seal_key;
    s.close();

    const plain = await cli(['verify', signedId, '--db', signedDb]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain(`, signature of key ${key.slice(0, 16)} not checked (pass --public-key to check it)`);
    const json = await cli(['verify', signedId, '--db', signedDb, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: signedId, state: 'sealed', claimedKey: key });
    const checked = await cli(['verify', signedId, '--db', signedDb, '--public-key', join(keys, 'conclave-seal.pub')]);
    expect(checked.stdout).toContain(`, signed by key ${key.slice(0, 16)}`);
    expect(checked.stdout).not.toContain('not checked');
    // An unsigned record says nothing of a signature.
    expect((await cli(['verify', id, '--db', db])).stdout).not.toContain('signature');
  });
});
