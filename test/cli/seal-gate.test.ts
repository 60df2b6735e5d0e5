import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { readDebateRows, rowDigests, sealOf } from '../../src/store/chain.js';
import { openStore } from '../../src/store/index.js';
import { capture, runCli } from '../helpers/cli.js';
import { copyRecord, sql } from '../helpers/record-sql.js';

// Every write of a seal passes one gate (src/store/gate.ts): each attack below once succeeded.

let dir = '';
let plainDb = '';
let signedDb = '';
let plainId = '';
let signedId = '';
let key = '';
let pub = '';
let otherKey = '';
let otherPub = '';
const cli = (args: string[]) => runCli(args, dir);

async function cliWithEnv(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture();
  const stderr = capture();
  const code = await main(args, { stdout, stderr, env, cwd: dir });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-seal-gate-'));
  expect((await cli(['keys', 'init', '--out', join(dir, 'keys')])).code).toBe(0);
  expect((await cli(['keys', 'init', '--out', join(dir, 'other')])).code).toBe(0);
  key = join(dir, 'keys', 'conclave-seal.key');
  pub = join(dir, 'keys', 'conclave-seal.pub');
  otherKey = join(dir, 'other', 'conclave-seal.key');
  otherPub = join(dir, 'other', 'conclave-seal.pub');
  plainDb = join(dir, 'plain.db');
  signedDb = join(dir, 'signed.db');
  const plain = await cli(['demo', '--db', plainDb, '--json', '--token-ms', '0', '--quiet']);
  expect(plain.code).toBe(0);
  plainId = (JSON.parse(plain.stdout) as { id: string }).id;
  const signed = await cli(['demo', '--db', signedDb, '--json', '--token-ms', '0', '--quiet', '--sign-key', key]);
  expect(signed.code).toBe(0);
  signedId = (JSON.parse(signed.stdout) as { id: string }).id;
}, 120_000);

function copyOf(source: string, name: string): string {
  return copyRecord(source, join(dir, `${name}.db`));
}

/** The debate row and call count, to show that a refused command wrote nothing. */
function snapshot(file: string, id: string): string {
  const s = new Database(file, { readonly: true });
  try {
    return JSON.stringify([s.prepare('select * from debates where id = ?').get(id), s.prepare('select count(*) as n from calls').get(), s.prepare('select count(*) as n from synthesis_attempts').get()]);
  } finally {
    s.close();
  }
}

/** Edits a turn and re-seals the record with the documented algorithm, as a forger without the private key can. */
function forgeAndReseal(file: string, id: string, extra: string[] = []): void {
  const s = new Database(file);
  s.prepare("update turns set position = 'forged' where debate_id = ? and round = 0").run(id);
  for (const statement of extra) s.prepare(statement).run();
  const rows = readDebateRows(s, id)!;
  const digests = rowDigests(rows);
  s.prepare('update debates set seal = ?, seal_rows_json = ? where id = ?').run(sealOf(rows, digests), JSON.stringify(digests), id);
  s.close();
}

describe('synthesize does not launder a broken record', () => {
  it('refuses a record whose question, turn and judge score were edited and last calls deleted, signing nothing', async () => {
    const file = copyOf(plainDb, 'synth-edited');
    sql(
      file,
      `update debates set question = 'forged question' where id = '${plainId}'`,
      `update turns set position = 'forged' where debate_id = '${plainId}' and round = 0`,
      `update rounds set convergence = 0.01 where debate_id = '${plainId}'`,
      `delete from calls where id in (select id from calls where debate_id = '${plainId}' order by id desc limit 2)`,
    );
    const before = snapshot(file, plainId);
    const r = await cliWithEnv(['synthesize', plainId, '--db', file, '--host', 'http://127.0.0.1:9'], { CONCLAVE_SIGNING_KEY: key });
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('does not match its hashes');
    expect(r.stderr).toContain('nothing was written or signed');
    expect(snapshot(file, plainId)).toBe(before);
    const verify = await cli(['verify', plainId, '--db', file, '--public-key', pub]);
    expect(verify.code).toBe(6);
  });

  it('refuses in the store itself, whatever calls it: a library write over an edited record throws and writes no seal', () => {
    const file = copyOf(plainDb, 'library-edited');
    sql(file, `update turns set position = 'forged' where debate_id = '${plainId}' and round = 0`);
    const before = snapshot(file, plainId);
    const store = openStore(file);
    try {
      expect(() => store.recordSynthesis(plainId, { status: 'failed', synthesis: null, error: 'x', model: 'm' })).toThrow(/does not match its hashes/);
      expect(() => store.finishDebate(plainId, { status: 'completed', exitReason: 'converged', error: null, roundsCompleted: 1, finalConvergence: 1, finishedAt: 1 })).toThrow(/does not match its hashes/);
      // The recorder's writes (a call with its rating, a judge's reply with its score) are each one `recorded` group.
      expect(() => store.recorded(plainId, () => store.recordJudgement(plainId, { round: 9, status: 'failed', score: null, convergence: null, error: 'x' }))).toThrow(/does not match its hashes/);
    } finally {
      store.close();
    }
    expect(snapshot(file, plainId)).toBe(before);
  });
});

describe('a signed record goes on only with the key that signed it', () => {
  it('refuses resume --sign-key over a forgery re-sealed without the private key', async () => {
    const file = copyOf(signedDb, 'resealed');
    forgeAndReseal(file, signedId, [`update debates set status = 'interrupted', exit_reason = 'interrupted' where id = '${signedId}'`]);
    // The unkeyed seal matches again: only the signature shows the forgery.
    expect((await cli(['verify', signedId, '--db', file])).code).toBe(0);
    const before = snapshot(file, signedId);
    const r = await cli(['resume', signedId, '--db', file, '--sign-key', key, '--host', 'http://127.0.0.1:9']);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('its seal is not signed by it: it was re-sealed without the private key');
    expect(snapshot(file, signedId)).toBe(before);
  });

  it('refuses to sign a forgery whose signature was stripped, and says how to go on unsigned', async () => {
    const file = copyOf(signedDb, 'stripped');
    forgeAndReseal(file, signedId, [`update debates set seal_signature = null, seal_key = null where id = '${signedId}'`]);
    const r = await cli(['synthesize', signedId, '--db', file, '--sign-key', key, '--host', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not signed, so signing it now');
    expect(r.stderr).toContain('without --sign-key');
  });

  it('refuses to go on with a signed record without its key, or with another key', async () => {
    const unsigned = await cli(['synthesize', signedId, '--db', copyOf(signedDb, 'nokey'), '--host', 'http://127.0.0.1:9']);
    expect(unsigned.code).toBe(2);
    expect(unsigned.stderr).toMatch(/is signed by key [0-9a-f]{16}; going on without that key/);
    const other = await cliWithEnv(['synthesize', signedId, '--db', copyOf(signedDb, 'otherkey'), '--host', 'http://127.0.0.1:9'], { CONCLAVE_SIGNING_KEY: otherKey });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('not by the key given');
  });

  it('lets the key holder go on: the gate passes and the command reaches the host', async () => {
    const r = await cli(['synthesize', signedId, '--db', copyOf(signedDb, 'samekey'), '--sign-key', key, '--host', 'http://127.0.0.1:9']);
    expect(r.code).toBe(3);
    expect(r.stderr).not.toContain('signed');
  });
});

describe('a signing key others can read', () => {
  it('is used with a warning naming the fix', async () => {
    chmodSync(key, 0o644);
    try {
      const r = await cli(['synthesize', signedId, '--db', copyOf(signedDb, 'readable-key'), '--sign-key', key, '--host', 'http://127.0.0.1:9']);
      expect(r.stderr).toContain(`the signing key ${key} can be read by every user of this machine (mode 0644)`);
      expect(r.stderr).toContain(`chmod 600 ${key}`);
    } finally {
      chmodSync(key, 0o600);
    }
    const quiet = await cli(['synthesize', signedId, '--db', copyOf(signedDb, 'private-key'), '--sign-key', key, '--host', 'http://127.0.0.1:9']);
    expect(quiet.stderr).not.toContain('can be read by');
  });

  it('is refused before any warning when it is not a private key at all (a public key passed by mistake)', async () => {
    chmodSync(pub, 0o644);
    const r = await cli(['synthesize', signedId, '--db', copyOf(signedDb, 'public-as-private'), '--sign-key', pub, '--host', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('can be read by');
  });
});

describe('import checks the signature it copies', () => {
  let bundle = '';
  let plainBundle = '';
  beforeAll(async () => {
    bundle = join(dir, 'signed.bundle.json');
    plainBundle = join(dir, 'plain.bundle.json');
    expect((await cli(['export', signedId, '--db', signedDb, '--format', 'bundle', '--out', bundle])).code).toBe(0);
    expect((await cli(['export', plainId, '--db', plainDb, '--format', 'bundle', '--out', plainBundle])).code).toBe(0);
  });

  it('refuses a bundle signed by another key than --public-key, and one not signed at all', async () => {
    const wrong = await cli(['import', bundle, '--db', join(dir, 'import-wrong.db'), '--public-key', otherPub]);
    expect(wrong.code).toBe(6);
    expect(wrong.stderr).toContain('is not signed by the given public key');
    const unsigned = await cli(['import', plainBundle, '--db', join(dir, 'import-unsigned.db'), '--public-key', pub]);
    expect(unsigned.code).toBe(6);
    expect(unsigned.stderr).toContain('its seal is not signed');
  });

  it('refuses a bundle re-sealed after an edit, keeping the old signature', async () => {
    const b = JSON.parse(readFileSync(bundle, 'utf8')) as { debate: Record<string, unknown>; calls: Record<string, unknown>[]; tables: Record<string, Record<string, unknown>[]> };
    const rows = { debate: b.debate, calls: b.calls.map((c, i) => ({ ...c, id: i + 1 })), tables: b.tables };
    rows.tables.turns![0]!.position = 'forged';
    const digests = rowDigests(rows);
    b.debate.seal = sealOf(rows, digests);
    b.debate.seal_rows_json = JSON.stringify(digests);
    const forged = join(dir, 'forged.bundle.json');
    writeFileSync(forged, JSON.stringify(b));
    expect((await cli(['import', forged, '--db', join(dir, 'import-forged-nokey.db')])).code).toBe(0);
    const r = await cli(['import', forged, '--db', join(dir, 'import-forged.db'), '--public-key', pub]);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('not signed by this key');
  });

  it('imports a bundle signed by the key, and says so', async () => {
    const r = await cli(['import', bundle, '--db', join(dir, 'import-ok.db'), '--public-key', pub]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('signed by the given key');
  });
});

describe('verify --public-key on a record with debates that were never signed', () => {
  it('says "not signed" for them, not broken, and fails only with --require-signed', async () => {
    const file = copyOf(plainDb, 'mixed');
    const withSigned = await cli(['import', join(dir, 'signed.bundle.json'), '--db', file]);
    expect(withSigned.code).toBe(0);
    const r = await cli(['verify', '--all', '--db', file, '--public-key', pub]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`${plainId} +sealed .*, not signed`));
    expect(r.stdout).toMatch(new RegExp(`${signedId} +sealed .*signed by key`));
    expect(r.stdout).not.toContain('BROKEN');
    const strict = await cli(['verify', '--all', '--db', file, '--public-key', pub, '--require-signed']);
    expect(strict.code).toBe(6);
    expect(strict.stderr).toContain('1 of 2 seals are not signed');
    const noKey = await cli(['verify', '--all', '--db', file, '--require-signed']);
    expect(noKey.code).toBe(2);
  });
});

describe('the legacy marker', () => {
  it('is not read: a debate with its seal and hashes removed and its replies forged is broken even when listed by hand', async () => {
    const file = copyOf(plainDb, 'legacy-insert');
    sql(
      file,
      'create table if not exists legacy_debates (debate_id text primary key not null)',
      `insert into legacy_debates values ('${plainId}')`,
      `update debates set seal = null, seal_rows_json = null where id = '${plainId}'`,
      `update calls set hash = null, prev_hash = null, raw = 'forged' where debate_id = '${plainId}'`,
    );
    const r = await cli(['verify', '--all', '--db', file]);
    expect(r.code).toBe(6);
    expect(r.stdout).toContain('BROKEN');
    expect(r.stdout).not.toContain('nothing to check');
  });

  it('cannot open an un-sealed, edited debate for resume --sign-key', async () => {
    const file = copyOf(plainDb, 'legacy-resume');
    sql(
      file,
      'create table if not exists legacy_debates (debate_id text primary key not null)',
      `insert into legacy_debates values ('${plainId}')`,
      `update debates set seal = null, seal_rows_json = null, status = 'interrupted', exit_reason = 'interrupted' where id = '${plainId}'`,
      `update turns set position = 'forged' where debate_id = '${plainId}'`,
    );
    const r = await cli(['resume', plainId, '--db', file, '--sign-key', key, '--host', 'http://127.0.0.1:9']);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain("the debate's seal is missing");
  });
});
