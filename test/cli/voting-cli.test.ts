import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

let dir = '';
let db = '';

const cli = (args: string[]) => runCli(args, dir, 120);

describe('the cluster-vote demo', () => {
  let demo: Awaited<ReturnType<typeof cli>>;
  let id = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'conclave-vote-'));
    db = join(dir, 'record.db');
    demo = await cli(['demo', '--preset', 'cluster-vote', '--db', db, '--token-ms', '0']);
    id = /Stored as (\S+)/.exec(demo.stderr)?.[1] ?? '';
  });

  it('runs a whole voted debate and prints the tiers with their approval sets on the card', () => {
    expect(demo.code).toBe(0);
    expect(id).not.toBe('');
    const card = demo.stdout;
    expect(card).toContain('CLUSTER VOTE');
    expect(card).toContain('advocates: builder, strategist, lead | critics: operator, controller, skeptic');
    expect(card).toMatch(/CONSENSUS\n {4}★ builder \(advocates\) · approved by advocates, critics .*accelerator, won over critics/s);
    expect(card).toMatch(/★ operator \(critics\) · approved by advocates, critics .*mitigator, won over advocates/s);
    expect(card).toMatch(/POLAR\n {4}- controller \(critics\) · approved by critics/);
    expect(card).toMatch(/REJECT\n {4}- lead \(advocates\) · approved by no cluster/);
    expect(demo.stderr).toContain('Cluster vote on the final positions · 6 positions, 30 votes');
  });

  it('exports the vote matrix and the tiers with show --json', async () => {
    const r = await cli(['show', id, '--db', db, '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      voting: {
        iterations: { matrix: { voters: string[]; votes: (string | null)[][] }; votes: { vote: string; parseStatus: string }[]; tiers: { artifactId: string; tier: string }[] }[];
      };
    };
    const [vote] = doc.voting.iterations;
    expect(vote!.votes).toHaveLength(30);
    expect(vote!.votes.every((v) => v.parseStatus === 'ok')).toBe(true);
    expect(vote!.matrix.voters).toHaveLength(6);
    expect(vote!.matrix.votes.flat().filter((v) => v === null)).toHaveLength(6);
    expect(vote!.tiers.map((t) => `${t.artifactId}:${t.tier}`)).toEqual([
      'builder:consensus',
      'operator:consensus',
      'controller:polar',
      'skeptic:polar',
      'strategist:polar',
      'lead:reject',
    ]);
  });

  it('replays the vote from the record: matrix, tiers and the card', async () => {
    const r = await cli(['replay', id, '--db', db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Cluster vote on the final positions');
    expect(r.stdout).toMatch(/builder \(advocates\) +· +Y +N +Y +N +Y/);
    expect(r.stdout).toMatch(/REJECT +lead \(advocates\)/);
    expect(r.stdout).toContain('CLUSTER VOTE');
  });

  it('shows the vote in the Markdown of show', async () => {
    const r = await cli(['show', id, '--db', db]);
    expect(r.stdout).toContain('## Cluster vote');
    expect(r.stdout).toContain('6. **REJECT** (exclude) · lead (advocates)');
  });
});
