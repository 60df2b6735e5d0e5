import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDebateRows, rowDigests, sealOf } from '../../src/store/chain.js';
import { callRows } from '../../src/serve/debate-page.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import type { StoredCall } from '../../src/store/store.js';
import { runCli } from '../helpers/cli.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';
import { copyRecord, sql } from '../helpers/record-sql.js';

// What a hostile review of the record found, each as the attack it tried.

let dir = '';
let db = '';
const ids: Record<string, string> = {};
const cli = (args: string[]) => runCli(args, dir);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-audit-'));
  db = join(dir, 'record.db');
  for (const preset of ['tech-decision', 'cluster-vote']) {
    const r = await cli(['demo', '--preset', preset, '--db', db, '--json', '--token-ms', '0', '--quiet']);
    expect(r.code).toBe(0);
    ids[preset] = (JSON.parse(r.stdout) as { id: string }).id;
  }
}, 120_000);

/** A copy of the record for one attack. */
function copyOf(name: string): string {
  return copyRecord(db, join(dir, `${name}.db`));
}

describe('a record cannot be laundered by un-sealing it', () => {
  it('catches a synthesis, a turn and a vote edited after the status was set to interrupted and the seal removed', async () => {
    const file = copyOf('unsealed-edit');
    const id = ids['cluster-vote']!;
    sql(
      file,
      `update debates set status = 'interrupted', exit_reason = 'interrupted', seal = null, seal_rows_json = null where id = '${id}'`,
      `update syntheses set body_json = replace(body_json, '"recommendation":"', '"recommendation":"FORGED ') where debate_id = '${id}'`,
      `update turns set position = 'forged position' where debate_id = '${id}' and round = 0`,
      `update votes set reason = 'forged reason' where debate_id = '${id}'`,
    );
    const r = await cli(['verify', id, '--db', file]);
    expect(r.code).toBe(6);
    expect(r.stdout).toContain('BROKEN');
    expect(r.stdout).toContain("the debate's seal is missing");
  });

  it('refuses to resume, and so to seal again, a debate un-sealed and edited', async () => {
    const file = copyOf('status-edit');
    const id = ids['tech-decision']!;
    sql(
      file,
      `update debates set status = 'interrupted', exit_reason = 'interrupted', seal = null, seal_rows_json = null where id = '${id}'`,
      `update turns set position = 'forged' where debate_id = '${id}' and round = 0`,
    );
    const verify = await cli(['verify', id, '--db', file]);
    expect(verify.code).toBe(6);
    expect(verify.stdout).toContain('BROKEN');
    const calls = (new Database(file, { readonly: true }).prepare('select count(*) as n from calls').get() as { n: number }).n;
    const resumed = await cli(['resume', id, '--db', file, '--host', 'http://127.0.0.1:9']);
    expect(resumed.code).toBe(6);
    expect(resumed.stderr).toContain('does not match its hashes');
    const after = new Database(file, { readonly: true });
    expect((after.prepare('select count(*) as n from calls').get() as { n: number }).n).toBe(calls);
    expect((after.prepare('select status from debates where id = ?').get(id) as { status: string }).status).toBe('interrupted');
    after.close();
  });

  it('reports a debate whose calls were all deleted and its seal removed as broken, not legacy, and will not bundle it', async () => {
    const file = copyOf('no-calls');
    const id = ids['tech-decision']!;
    sql(file, `update debates set seal = null, seal_rows_json = null where id = '${id}'`, `delete from votes where debate_id = '${id}'`, `delete from calls where debate_id = '${id}'`);
    const verify = await cli(['verify', id, '--db', file]);
    expect(verify.code).toBe(6);
    expect(verify.stdout).not.toContain('legacy');
    const exported = await cli(['export', id, '--db', file, '--format', 'bundle', '--out', join(dir, 'no-calls.bundle.json')]);
    expect(exported.code).toBe(6);
    expect(existsSync(join(dir, 'no-calls.bundle.json'))).toBe(false);
  });

  it('keeps each verdict on its own line when an edited status carries a newline', async () => {
    const file = copyOf('status-newline');
    const id = ids['tech-decision']!;
    sql(file, `update debates set status = 'x' || char(10) || '${id}  sealed', seal = null where id = '${id}'`);
    const verify = await cli(['verify', id, '--db', file]);
    expect(verify.code).toBe(6);
    expect(verify.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(verify.stderr).not.toMatch(/\n\S+ {2}sealed/);
  });
});

describe('signed seals', () => {
  let keys = '';
  let signedDb = '';
  let signedId = '';

  beforeAll(async () => {
    keys = join(dir, 'keys');
    const init = await cli(['keys', 'init', '--out', keys]);
    expect(init.code).toBe(0);
    expect(readFileSync(join(keys, 'conclave-seal.pub'), 'utf8')).toContain('BEGIN PUBLIC KEY');
    signedDb = join(dir, 'signed.db');
    const r = await cli(['demo', '--db', signedDb, '--json', '--token-ms', '0', '--quiet', '--sign-key', join(keys, 'conclave-seal.key')]);
    expect(r.code).toBe(0);
    signedId = (JSON.parse(r.stdout) as { id: string }).id;
  }, 60_000);

  it('proves a seal written with the private key', async () => {
    const r = await cli(['verify', signedId, '--db', signedDb, '--public-key', join(keys, 'conclave-seal.pub')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/sealed {4}\d+ calls, seal [0-9a-f]{64}, signed by key [0-9a-f]{16}/);
  });

  it('detects a record edited and re-sealed without the private key, which a plain verify cannot', async () => {
    const forged = join(dir, 'forged.db');
    sql(signedDb, `vacuum into '${forged}'`);
    // The forger edits a turn and recomputes every digest and the seal, as docs/record.md describes.
    const s = new Database(forged);
    s.prepare("update turns set position = 'forged' where round = 0").run();
    const rows = readDebateRows(s, signedId)!;
    const digests = rowDigests(rows);
    s.prepare('update debates set seal = ?, seal_rows_json = ? where id = ?').run(sealOf(rows, digests), JSON.stringify(digests), signedId);
    s.close();

    expect((await cli(['verify', signedId, '--db', forged])).code).toBe(0);
    const r = await cli(['verify', signedId, '--db', forged, '--public-key', join(keys, 'conclave-seal.pub')]);
    expect(r.code).toBe(6);
    expect(r.stdout).toContain('its seal is not signed by this key (re-sealed without the private key');
  });

  it('proves a bundle sealed with the key, and refuses one sealed by another key', async () => {
    const bundle = join(dir, 'signed.bundle.json');
    expect((await cli(['export', signedId, '--db', signedDb, '--format', 'bundle', '--out', bundle])).code).toBe(0);
    const ok = await cli(['verify', '--bundle', bundle, '--public-key', join(keys, 'conclave-seal.pub')]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('signed by key');

    const other = join(dir, 'other-keys');
    expect((await cli(['keys', 'init', '--out', other])).code).toBe(0);
    const wrong = await cli(['verify', '--bundle', bundle, '--public-key', join(other, 'conclave-seal.pub')]);
    expect(wrong.code).toBe(6);
    expect(wrong.stderr).toContain('is not signed by the key in');
  });

  it('never overwrites a key pair', async () => {
    const again = await cli(['keys', 'init', '--out', keys]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');
  });

  it('writes no half pair: a link to nothing where either key goes is refused before anything is written', async () => {
    const dangling = join(dir, 'dangling-keys');
    mkdirSync(dangling);
    symlinkSync(join(dir, 'nowhere', 'x'), join(dangling, 'conclave-seal.key'));
    const linked = await cli(['keys', 'init', '--out', dangling]);
    expect(linked.code).toBe(2);
    expect(linked.stderr).toContain(`${join(dangling, 'conclave-seal.key')} already exists; a key pair is never overwritten.`);
    // The public half's place taken by a link to nothing: refused too, and the private key is not left behind.
    const half = join(dir, 'half-keys');
    mkdirSync(half);
    symlinkSync(join(dir, 'nowhere', 'y'), join(half, 'conclave-seal.pub'));
    const { main } = await import('../../src/cli/main.js');
    const { capture } = await import('../helpers/cli.js');
    expect(await main(['keys', 'init', '--out', half], { stdout: capture(), stderr: capture(), env: {}, cwd: dir })).toBe(2);
    expect(existsSync(join(half, 'conclave-seal.key'))).toBe(false);
  });
});

describe('bundles are validated whole before anything is written', () => {
  let bundle: { debate: Record<string, unknown>; calls: Record<string, unknown>[]; tables: Record<string, Record<string, unknown>[]> };

  beforeAll(async () => {
    const file = join(dir, 'good.bundle.json');
    expect((await cli(['export', ids['tech-decision']!, '--db', db, '--format', 'bundle', '--out', file])).code).toBe(0);
    bundle = JSON.parse(readFileSync(file, 'utf8')) as typeof bundle;
  });

  async function importAltered(name: string, alter: (b: typeof bundle) => void): Promise<{ code: number; stderr: string; target: string }> {
    const b = structuredClone(bundle);
    alter(b);
    const file = join(dir, `${name}.bundle.json`);
    writeFileSync(file, JSON.stringify(b));
    const target = join(dir, `${name}-target.db`);
    const r = await cli(['import', file, '--db', target]);
    return { code: r.code, stderr: r.stderr, target };
  }

  it('refuses a duplicated turn row as tampering, naming it, and creates no database', async () => {
    const r = await importAltered('duplicate', (b) => b.tables.turns!.push({ ...b.tables.turns![0]! }));
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/holds the `turns` row 0\/\S+ twice/);
    expect(r.stderr).not.toContain('bug');
    expect(existsSync(r.target)).toBe(false);
  });

  it('refuses an unknown column with the upgrade hint, and creates no database', async () => {
    const r = await importAltered('unknown-column', (b) => {
      b.calls[0]!.future_column = 'x';
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('`calls.future_column` that this Conclave does not know');
    expect(r.stderr).toContain('upgrade Conclave');
    expect(existsSync(r.target)).toBe(false);
  });

  it('refuses a table from a newer Conclave with the upgrade hint, not as damage, and creates no database', async () => {
    for (const table of ['future_table', 'constructor']) {
      const r = await importAltered(`unknown-table-${table}`, (b) => {
        (b.tables as Record<string, unknown[]>)[table] = [{ debate_id: b.debate.id, x: 1 }];
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`has rows of a table \`${table}\` that this Conclave does not know`);
      expect(r.stderr).toContain('upgrade Conclave');
      expect(r.stderr).not.toContain('damaged');
      expect(existsSync(r.target)).toBe(false);
    }
  });

  it('refuses calls that carry row ids, which would be inserted as they are, in import and verify --bundle alike', async () => {
    const r = await importAltered('call-ids', (b) => b.calls.forEach((c, i) => (c.id = i + 1)));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is damaged: call 1 carries a row id, which a bundle's calls never do.");
    expect(existsSync(r.target)).toBe(false);
    const verified = await cli(['verify', '--bundle', join(dir, 'call-ids.bundle.json')]);
    expect(verified.code).not.toBe(0);
    expect(verified.stderr).toContain('carries a row id');
  });

  it('refuses a debate id that would forge a line of output, and creates no database', async () => {
    const r = await importAltered('newline-id', (b) => {
      const forged = `${String(b.debate.id)}\nother-id  sealed`;
      b.debate.id = forged;
      for (const c of b.calls) c.debate_id = forged;
      for (const rows of Object.values(b.tables)) for (const row of rows) row.debate_id = forged;
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not a Conclave debate id');
    expect(existsSync(r.target)).toBe(false);
  });
});

describe('file readers refuse what is not a regular file of sensible size', () => {
  let fifo = '';
  beforeAll(() => {
    fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
  });

  for (const [what, args] of [
    ['--preset', (f: string) => ['run', 'Q?', '--preset', f]],
    ['--hosts', (f: string) => ['run', 'Q?', '--preset', 'tech-decision', '--hosts', f]],
    ['--attach', (f: string) => ['run', 'Q?', '--preset', 'tech-decision', '--attach', f, '--host', 'http://127.0.0.1:9']],
    ['import', (f: string) => ['import', f]],
  ] as const) {
    it(`refuses /dev/zero and a named pipe given to ${what} at once, with exit 2`, async () => {
      const target = join(dir, `never-${what.replace(/-/g, '')}.db`);
      const zero = await cli([...args('/dev/zero'), '--db', target]);
      expect(zero.code).toBe(2);
      expect(zero.stderr).toContain('/dev/zero is a device, not a regular file');
      const pipe = await cli([...args(fifo), '--db', target]);
      expect(pipe.code).toBe(2);
      expect(pipe.stderr).toContain(`${fifo} is a named pipe, not a regular file`);
      expect(existsSync(target)).toBe(false);
    });
  }

  it('refuses a preset larger than 1 MiB before parsing it', async () => {
    const big = join(dir, 'big.yaml');
    writeFileSync(big, `name: x\n#${'x'.repeat(1024 * 1024)}\n`);
    const r = await cli(['run', 'Q?', '--preset', big, '--db', join(dir, 'never-big.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the limit is 1,048,576 bytes');
  });
});

describe('runs against the simulator', () => {
  let sim: SimHandle;
  const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 1, convergenceThreshold: 0.99, callTimeoutSeconds: 30 } });

  beforeAll(async () => {
    sim = await startSimulator({
      models: simModels(preset),
      tokenMs: 0,
      respond: scriptedResponder([0.3, 0.4], (req) => {
        // Agent b's opening breaks off after a few tokens, as a crashed runner's stream does.
        if (stageOf(req) === 'opening' && agentOf(req) === 'b' && req.messages.at(-1)?.content.includes('PARTIAL')) {
          return { content: reply.opening('b'), error: 'llama runner process has terminated', failAfterTokens: 4 };
        }
        return undefined;
      }).respond,
    });
  });

  afterAll(async () => {
    await sim?.close();
  });

  function presetIn(folder: string, extra: Record<string, unknown>): string {
    mkdirSync(folder, { recursive: true });
    const file = join(folder, 'shared.json');
    writeFileSync(file, JSON.stringify({ ...preset, ...extra }));
    return file;
  }

  it('refuses a preset that attaches /etc/passwd, a path climbing out with .., or a symlink leading out of its folder', async () => {
    const folder = join(dir, 'shared-preset');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(dir, 'secret.md'), 'secret\n');
    symlinkSync(join(dir, 'secret.md'), join(folder, 'innocent.md'));
    for (const attach of ['/etc/passwd', '../secret.md', 'innocent.md']) {
      const r = await cli(['run', 'Q?', '--preset', presetIn(folder, { attach: [attach] }), '--host', sim.url, '--db', join(dir, 'never-attach.db')]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`The preset attaches \`${attach}\``);
      expect(r.stderr).toContain('a preset may only attach files inside its own folder');
    }
    expect(existsSync(join(dir, 'never-attach.db'))).toBe(false);
  });

  it('names every attachment and the preset\'s own hosts in the header, even with --quiet', async () => {
    const folder = join(dir, 'attaching-preset');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'notes.md'), '# Notes\n\nA is cheaper.\n');
    writeFileSync(join(dir, 'mine.md'), 'My own notes.\n');
    const file = presetIn(folder, { attach: ['notes.md'], hosts: [{ url: sim.url }] });
    // A preset's file goes to the preset's own host only with the user's consent.
    const r = await cli(['run', 'Q?', '--preset', file, '--attach', 'mine.md', '--db', join(dir, 'header.db'), '--quiet', '--trust-preset-hosts']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`Attached by the preset .*: notes\\.md \\(.*\\), sent to ${sim.url.replace(/\./g, '\\.')}`));
    expect(r.stderr).toContain(`Attached with --attach: mine.md`);
    expect(r.stderr).toContain(`, sent to ${sim.url}`);
    expect(r.stderr).toContain(`names its own hosts: the question and attachments go to ${sim.url}`);
  });

  it('keeps the text of a reply whose stream broke, marked partial, in show --json and the viewer', async () => {
    const target = join(dir, 'partial.db');
    const r = await cli(['run', 'PARTIAL?', '--preset', presetIn(join(dir, 'partial-preset'), {}), '--host', sim.url, '--db', target, '--json', '--quiet']);
    const doc = JSON.parse(r.stdout) as { id: string; calls: { agentId: string; stage: string; status: string; raw: string; partial: boolean }[] };
    const broken = doc.calls.find((c) => c.agentId === 'b' && c.stage === 'opening')!;
    expect(broken.status).toBe('error');
    expect(broken.partial).toBe(true);
    expect(broken.raw.length).toBeGreaterThan(0);
    expect(reply.opening('b').startsWith(broken.raw)).toBe(true);
    // A broken stream is a passing failure: the send and its two resends each keep their partial text.
    expect(doc.calls.filter((c) => c.partial).map((c) => c.agentId)).toEqual(['b', 'b', 'b']);

    const shown = JSON.parse((await cli(['show', doc.id, '--db', target, '--json'])).stdout) as typeof doc;
    expect(shown.calls.find((c) => c.partial)?.raw).toBe(broken.raw);
    const page = String(callRows({ ...(broken as unknown as StoredCall), id: 1, messages: [], options: {}, metrics: {} as StoredCall['metrics'], startedAt: 0, finishedAt: 0 }, 0));
    expect(page).toContain('partial reply (the stream broke before it finished)');
    expect((await cli(['verify', doc.id, '--db', target])).code).toBe(0);
  });
});
