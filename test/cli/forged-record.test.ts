import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SEALED_TABLES } from '../../src/store/chain.js';
import { openRecord } from '../../src/store/open-read.js';
import { checkRow, checkedDebate, type RowProblem } from '../../src/store/row-check.js';
import { runCli } from '../helpers/cli.js';
import { forgedCopy } from '../helpers/forge.js';
import { startViewer } from '../helpers/viewer.js';

// A record edited and sealed again passes `verify` (only a signature tells it apart, docs/record.md);
// its values are then whatever was written. Every reader sets aside what it cannot show, names the
// debate, the row and the column, and exits cleanly, or exits 6 when nothing can be shown.

const cli = (args: string[]) => runCli(args, dir);

let dir = '';
const records: Record<string, { db: string; id: string }> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-forged-'));
  for (const preset of ['tech-decision', 'cluster-vote', 'tension-map', 'tournament']) {
    const db = join(dir, `${preset}.db`);
    const r = await cli(['demo', '--preset', preset, '--db', db, '--json', '--token-ms', '0', '--quiet']);
    expect(r.code).toBe(0);
    records[preset] = { db, id: (JSON.parse(r.stdout) as { id: string }).id };
  }
}, 180_000);

const first = (table: string) => `rowid = (select min(rowid) from ${table} where debate_id = ?)`;

// `row`: what every message about the edit names; `exit`: 6 when nothing of the debate can be shown.
const edits: { name: string; preset: string; statement: string; row: string; exit: 0 | 6 }[] = [
  { name: 'a preset that is JSON null', preset: 'tech-decision', statement: "update debates set preset_json = 'null' where id = ?", row: 'its `debates` row, column `preset_json`', exit: 6 },
  { name: 'a preset that is a string', preset: 'tech-decision', statement: `update debates set preset_json = '"x"' where id = ?`, row: 'its `debates` row, column `preset_json`', exit: 6 },
  { name: 'a start time that is text', preset: 'tech-decision', statement: "update debates set created_at = 'x' where id = ?", row: 'its `debates` row, column `created_at`', exit: 6 },
  { name: "a call's notes that are a string", preset: 'tech-decision', statement: `update calls set normalized_json = '"x"' where ${first('calls')}`, row: 'call 1 (opening, round 0, ', exit: 0 },
  { name: "a call's start time that is text", preset: 'tech-decision', statement: `update calls set started_at = 'x' where ${first('calls')}`, row: 'call 1 (opening, round 0, ', exit: 0 },
  { name: 'a synthesis that is a number', preset: 'tech-decision', statement: "update syntheses set body_json = '7' where debate_id = ?", row: 'the `syntheses` row (-), column `body_json`', exit: 0 },
  { name: 'a synthesis attempt dated by text', preset: 'tech-decision', statement: "update synthesis_attempts set created_at = 'x' where debate_id = ?", row: 'the `synthesis_attempts` row (1), column `created_at`', exit: 0 },
  { name: 'a round number far beyond any run', preset: 'tech-decision', statement: `update turns set round = 1e308 where ${first('turns')}`, row: 'the `turns` row (1e+308/', exit: 0 },
  { name: "a judge's round number far beyond any run", preset: 'tech-decision', statement: `update rounds set round = 1e308 where ${first('rounds')}`, row: 'the `rounds` row (1e+308), column `round`', exit: 0 },
  { name: 'a vote that is text', preset: 'cluster-vote', statement: `update votes set vote = 'x' where ${first('votes')}`, row: 'the `votes` row', exit: 0 },
  { name: "a tension map's review reasons that are a number", preset: 'tension-map', statement: "update tension_maps set review_reasons_json = '7' where debate_id = ?", row: 'the `tension_maps` row (-), column `review_reasons_json`', exit: 0 },
  { name: "a tension map's findings that are an object", preset: 'tension-map', statement: `update tension_maps set major_findings_json = '{"a":1}' where debate_id = ?`, row: 'the `tension_maps` row (-), column `major_findings_json`', exit: 0 },
  { name: 'a protocol step that is JSON null', preset: 'tournament', statement: `update protocol_steps set body_json = 'null' where ${first('protocol_steps')}`, row: 'the `protocol_steps` row (0), column `body_json`', exit: 0 },
];

// `export --format json` prints the document `show --json` does.
const readers = [['show'], ['show', '--json'], ['export', '--format', 'md'], ['replay'], ['rescore']];

describe('readers of a record edited and sealed again', () => {
  for (const edit of edits) {
    it(`${edit.exit === 6 ? 'refuse' : 'show'} a debate with ${edit.name}, naming the row, with no internal error`, async () => {
      const { db, id } = records[edit.preset]!;
      const copy = forgedCopy(db, join(dir, `${edit.name.replace(/\W+/g, '-')}.db`), id, edit.statement);
      expect((await cli(['verify', id, '--db', copy])).code).toBe(0);
      let named = 0;
      for (const reader of readers) {
        const r = await cli([reader[0]!, id, ...reader.slice(1), '--db', copy]);
        const seen = { reader: reader.join(' '), code: r.code, stderr: r.stderr };
        expect(seen.stderr, seen.reader).not.toContain('internal error');
        expect(seen.stderr, seen.reader).not.toMatch(/\n\s+at /);
        if (r.code === 0 && r.stderr === '') continue; // this reader does not read the edited value
        expect(seen.code, seen.reader).toBe(edit.exit);
        expect(seen.stderr.toLowerCase(), seen.reader).toContain(`debate \`${id}\``);
        expect(seen.stderr, seen.reader).toContain(edit.row);
        if (edit.exit === 6) expect(seen.stderr).toMatch(/cannot be (shown|re-scored)/);
        named++;
      }
      expect(named).toBeGreaterThan(0);
      const v = await startViewer(copy);
      try {
        for (const path of [`/debates/${id}`, `/api/debates/${id}`, `/api/debates/${id}/events`]) {
          const res = await fetch(`${v.url}${path}`);
          const body = await res.text();
          // A page that does not read the edited value shows the debate; one that does names the row.
          if (res.status !== 200) expect({ path, status: res.status, named: body.includes('cannot be shown') }).toEqual({ path, status: 500, named: true });
          expect(body).not.toContain('internal error');
        }
      } finally {
        await v.close();
      }
    });
  }

  it('prints forged escape sequences and direction controls in ids and text inertly, in the output and in the messages', async () => {
    const { db, id } = records['tech-decision']!;
    const hostile = 'ev\u001b[2J\u001b]0;pwn\u0007il\u202egnp.exe';
    const copy = forgedCopy(
      db,
      join(dir, 'hostile.db'),
      id,
      `update debates set question = '${hostile}' where id = ?`,
      `update turns set agent_id = '${hostile}', position = '${hostile}' where ${first('turns')}`,
      `update calls set agent_id = '${hostile}', normalized_json = '"x"' where ${first('calls')}`,
    );
    for (const reader of [...readers, ['list']]) {
      const r = await cli(reader[0] === 'list' ? ['list', '--db', copy] : [reader[0]!, id, ...reader.slice(1), '--db', copy]);
      expect(r.code, reader.join(' ')).toBe(0);
      for (const text of [r.stdout, r.stderr]) {
        expect(text, reader.join(' ')).not.toMatch(/[\u001b\u0007\u202e]/);
      }
    }
    const shown = await cli(['show', id, '--db', copy]);
    expect(shown.stderr).toContain('call 1 (opening, round 0, evil<U+202E>gnp.exe), column `normalized_json`');
  });

  it('refuses to resume or synthesize a debate with a value Conclave never writes, naming it, before any call', async () => {
    const { db, id } = records['tech-decision']!;
    const cases = [
      { statement: "update debates set preset_json = 'null' where id = ?", row: 'its `debates` row, column `preset_json`' },
      { statement: `update turns set body_json = '7' where ${first('turns')}`, row: 'column `body_json`' },
    ];
    for (const [i, c] of cases.entries()) {
      const copy = forgedCopy(db, join(dir, `writer-${i}.db`), id, "update debates set status = 'interrupted', exit_reason = 'interrupted' where id = ?", c.statement);
      for (const [command, verb] of [['resume', 'resumed'], ['synthesize', 'synthesized']] as const) {
        const r = await cli([command, id, '--db', copy, '--host', 'http://127.0.0.1:9']);
        expect({ command, code: r.code }).toEqual({ command, code: 6 });
        expect(r.stderr).toContain(`Debate \`${id}\` cannot be ${verb}: `);
        expect(r.stderr).toContain(c.row);
        expect(r.stderr).not.toContain('Cannot reach');
      }
    }
  });

  it('finds nothing to set aside in the records Conclave writes, and knows every table the seal covers', async () => {
    for (const { db, id } of Object.values(records)) {
      const reader = await openRecord(db);
      try {
        expect(checkedDebate(reader, id).problems).toEqual([]);
      } finally {
        reader.close();
      }
    }
    for (const table of ['debates', 'calls', ...Object.keys(SEALED_TABLES)]) {
      const problems: RowProblem[] = [];
      checkRow(table, table === 'debates' ? { id: 7 } : { debate_id: 7 }, problems);
      expect({ table, checked: problems.length > 0 }).toEqual({ table, checked: true });
    }
  });
});
