import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

let dir = '';
const track = closesAfterEach();
const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.95, callTimeoutSeconds: 30 } });
const cli = (args: string[]) => runCli(args, dir);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-pool-'));
  writeFileSync(join(dir, 'preset.json'), JSON.stringify(preset));
});

/** Host B (listed first, so it takes every call while it is there) is switched off when round 0's judge is asked; A serves all but `onlyOnB`. */
async function pool(name: string, onlyOnB?: string): Promise<{ a: SimHandle; b: SimHandle; hostsFile: string; db: string }> {
  let b: SimHandle | null = null;
  let gone = false;
  b = await startSimulator({
    models: simModels(preset),
    respond: scriptedResponder([0.3, 0.4], (req) => {
      if (stageOf(req) === 'judge' && !gone) {
        gone = true;
        void b!.kill();
      }
      return undefined;
    }).respond,
  });
  const killed = b;
  track({ close: () => killed.close() });
  const a = track(await startSimulator({ models: simModels(preset).filter((m) => m.name !== onlyOnB), respond: scriptedResponder([0.3, 0.4]).respond }));
  const hostsFile = join(dir, `${name}.yaml`);
  writeFileSync(hostsFile, `- { url: ${b.url}, numParallel: 2 }\n- { url: ${a.url}, numParallel: 2 }\n`);
  return { a, b, hostsFile, db: join(dir, `${name}.db`) };
}

describe('conclave run on a pool that loses a host', () => {
  it.each([[[]], [['--quiet']]])('finishes on the other host, says once on stderr which host left and why, and the record verifies (%j)', async (flags: string[]) => {
    const { a, b, hostsFile, db } = await pool(`both${flags.join('')}`);
    const run = await cli(['run', 'Should we do A?', '--preset', join(dir, 'preset.json'), '--hosts', hostsFile, '--db', db, ...flags]);
    expect(run.code).toBe(0);
    expect(run.stderr.match(/left the pool/g)).toHaveLength(1);
    expect(run.stderr).toContain(`warning: Host ${b.url} left the pool`);
    const [debate] = JSON.parse((await cli(['list', '--db', db, '--json'])).stdout) as { id: string }[];
    const doc = JSON.parse((await cli(['show', debate!.id, '--db', db, '--json'])).stdout) as { calls: { stage: string; host: string; status: string }[] };
    expect(doc.calls.filter((c) => c.stage === 'judge').map((c) => [c.host, c.status])).toEqual([
      [b.url, 'error'],
      [a.url, 'ok'],
      [a.url, 'ok'],
    ]);
    expect((await cli(['verify', debate!.id, '--db', db])).code).toBe(0);
  });

  it('stops with the host and the model named and no stack trace when the only host of a model leaves, and resume goes on once it is back', async () => {
    const { b, hostsFile, db } = await pool('only-b', 'model-1:1b');
    const run = await cli(['run', 'Should we do A?', '--preset', join(dir, 'preset.json'), '--hosts', hostsFile, '--db', db]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`${b.url} stopped answering, and no host left in the pool serves \`model-1:1b\` (agent b).`);
    expect(run.stderr).toContain('conclave resume');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    const [debate] = JSON.parse((await cli(['list', '--db', db, '--json'])).stdout) as { id: string; status: string }[];
    expect(debate!.status).toBe('interrupted');
    expect((await cli(['verify', debate!.id, '--db', db])).code).toBe(0);

    track(await startSimulator({ port: b.port, models: simModels(preset), respond: scriptedResponder([0.3, 0.4]).respond }));
    const resumed = await cli(['resume', debate!.id, '--db', db]);
    expect(resumed.code).toBe(0);
    expect((await cli(['verify', debate!.id, '--db', db])).code).toBe(0);
  });
});
