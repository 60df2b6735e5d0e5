import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const cli = (args: string[]) => runCli(args, dir);

let dir = '';
let db = '';
const ids: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-record-'));
  db = join(dir, 'record.db');
  // The demo presets between them hold every kind of record: turns, rounds, votes linked to calls, tension maps.
  for (const preset of ['tech-decision', 'cluster-vote', 'tension-map', 'tournament']) {
    const r = await cli(['demo', '--preset', preset, '--db', db, '--json', '--token-ms', '0']);
    expect(r.code).toBe(0);
    ids[preset] = (JSON.parse(r.stdout) as { id: string }).id;
  }
}, 120_000);

function sql(file: string, statement: string, ...params: unknown[]): void {
  const s = new Database(file);
  try {
    s.prepare(statement).run(...params);
  } finally {
    s.close();
  }
}

describe('conclave verify', () => {
  it('verifies every debate of a database with --all and exits 0', async () => {
    const r = await cli(['verify', '--all', '--db', db]);
    expect(r.code).toBe(0);
    for (const id of Object.values(ids)) expect(r.stdout).toMatch(new RegExp(`^${id}  sealed {4}\\d+ calls, seal [0-9a-f]{64}$`, 'm'));
  });

  it('names the call whose reply lost one character, and exits 6', async () => {
    const copy = join(dir, 'tampered.db');
    sql(db, 'vacuum into ?', copy);
    const id = ids['tech-decision']!;
    const s = new Database(copy);
    const victim = s.prepare("select id, raw from calls where debate_id = ? and stage = 'critique' order by id limit 1").get(id) as { id: number; raw: string };
    const number = (s.prepare('select count(*) as n from calls where debate_id = ? and id <= ?').get(id, victim.id) as { n: number }).n;
    s.close();
    sql(copy, 'update calls set raw = ? where id = ?', victim.raw.slice(0, -2) + victim.raw.slice(-1), victim.id);

    const r = await cli(['verify', id, '--db', copy]);
    expect(r.code).toBe(6);
    expect(r.stdout).toContain(`${id}  BROKEN    call ${number} of`);
    expect(r.stdout).toContain('its content does not match its hash');
    expect(r.stderr).toContain('1 of 1 debate in');
    expect(r.stderr).not.toMatch(/\n\s+at /);

    const all = await cli(['verify', '--all', '--db', copy, '--json']);
    expect(all.code).toBe(6);
    const verdicts = all.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: string; state: string; call?: { number: number } });
    expect(verdicts.find((v) => v.id === id)).toMatchObject({ state: 'broken', call: { number } });
    expect(verdicts.filter((v) => v.state === 'sealed')).toHaveLength(3);
  });

  it('keeps escape sequences planted in the record off the terminal', async () => {
    const copy = join(dir, 'hostile.db');
    sql(db, 'vacuum into ?', copy);
    const id = ids['tech-decision']!;
    sql(copy, "update calls set agent_id = agent_id || char(27) || ']0;pwned' || char(7) where id = (select min(id) from calls where debate_id = ?)", id);
    const r = await cli(['verify', id, '--db', copy]);
    expect(r.code).toBe(6);
    expect(r.stdout).toContain(`${id}  BROKEN    call 1 of`);
    expect(r.stdout + r.stderr).not.toMatch(/[\u001b\u0007]/);
  });

  it('asks for an id or --all', async () => {
    const r = await cli(['verify', '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Name the debate to verify');
  });
});

describe('bundles: export --format bundle and import', () => {
  it('round-trips every demo debate into a database that already holds others, keeping show --json byte-identical', async () => {
    const target = join(dir, 'target.db');
    // Another debate first, so the imported calls get other row ids than they had.
    expect((await cli(['demo', '--db', target, '--quiet', '--token-ms', '0'])).code).toBe(0);
    for (const id of Object.values(ids)) {
      const file = join(dir, `${id}.bundle`);
      const exported = await cli(['export', id, '--format', 'bundle', '--out', file, '--db', db]);
      expect(exported.code).toBe(0);
      const imported = await cli(['import', file, '--db', target]);
      expect(imported.code).toBe(0);
      expect(imported.stdout).toBe(`${id}\n`);
      expect(imported.stderr).toMatch(/: sealed, \d+ calls verified\./);
      const before = await cli(['show', id, '--json', '--db', db]);
      const after = await cli(['show', id, '--json', '--db', target]);
      expect(after.stdout).toBe(before.stdout);
    }
    const verify = await cli(['verify', '--all', '--db', target]);
    expect(verify.code).toBe(0);
    expect(verify.stdout.trim().split('\n')).toHaveLength(5);
  });

  it('accepts a second import of the same debate as a no-op, and refuses a different record under the same id', async () => {
    const id = ids['cluster-vote']!;
    const file = join(dir, 'dup.bundle');
    await cli(['export', id, '--format', 'bundle', '--out', file, '--db', db]);
    const target = join(dir, 'dup.db');
    expect((await cli(['import', file, '--db', target])).code).toBe(0);
    const again = await cli(['import', file, '--db', target]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('identical: nothing to do');

    // Same id, other content (and a valid chain): the finished time differs, and it is resealed.
    sql(target, 'update debates set finished_at = finished_at + 1, seal = null where id = ?', id);
    const refused = await cli(['import', file, '--db', target]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain(`Debate \`${id}\` is already in`);
  });

  it('refuses a bundle edited by one character, names the call, and creates nothing', async () => {
    const id = ids['tension-map']!;
    const file = join(dir, 'edited.bundle');
    await cli(['export', id, '--format', 'bundle', '--out', file, '--db', db]);
    const bundle = JSON.parse(readFileSync(file, 'utf8')) as { calls: { raw: string }[] };
    const raw = bundle.calls[2]!.raw;
    bundle.calls[2]!.raw = raw.replace(/[a-z]/, (c) => (c === 'a' ? 'b' : 'a'));
    expect(bundle.calls[2]!.raw).not.toBe(raw);
    writeFileSync(file, JSON.stringify(bundle));
    const target = join(dir, 'never.db');
    const r = await cli(['import', file, '--db', target]);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('call 3 of');
    expect(r.stderr).toContain('Nothing was imported');
    expect(existsSync(target)).toBe(false);
  });

  it('refuses to export or import a debate that is still running', async () => {
    const copy = join(dir, 'running.db');
    sql(db, 'vacuum into ?', copy);
    const id = ids['tech-decision']!;
    // Our own pid: the debate's process is alive, so opening the file leaves it running.
    sql(copy, "update debates set status = 'running', seal = null, pid = ? where id = ?", process.pid, id);
    const r = await cli(['export', id, '--format', 'bundle', '--out', join(dir, 'running.bundle'), '--db', copy]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is still running');

    const file = join(dir, 'was-running.bundle');
    await cli(['export', id, '--format', 'bundle', '--out', file, '--db', db]);
    const bundle = JSON.parse(readFileSync(file, 'utf8')) as { debate: { status: string } };
    bundle.debate.status = 'running';
    writeFileSync(file, JSON.stringify(bundle));
    const imported = await cli(['import', file, '--db', join(dir, 'never3.db')]);
    expect(imported.code).toBe(2);
    expect(imported.stderr).toContain('while it was still running');
  });

  it('refuses a file that is not a bundle, with a hint', async () => {
    const id = ids['tech-decision']!;
    const file = join(dir, 'doc.json');
    await cli(['export', id, '--format', 'json', '--out', file, '--db', db]);
    const r = await cli(['import', file, '--db', join(dir, 'never2.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not a Conclave bundle');
    expect(r.stderr).toContain('--format bundle');
  });
});
