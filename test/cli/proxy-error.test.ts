import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

// A proxy in front of a host that is down: every path gets its HTML 502 page, which is not JSON.
const PAGE = '<html><body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>';

let dir = '';
let sim: SimHandle;
let proxy: ReturnType<typeof createServer>;
let proxyUrl = '';
let hostsFile = '';
let presetFile = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-proxy-'));
  const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 1, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } });
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.9]).respond });
  proxy = createServer((req, res) => {
    req.resume();
    res.writeHead(502, { 'content-type': 'text/html' });
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  hostsFile = join(dir, 'pool.yaml');
  writeFileSync(hostsFile, `- url: ${sim.url}\n- url: ${proxyUrl}\n`);
});

afterAll(async () => {
  await sim?.close();
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The CLI in a process of its own, from source: what reaches the process's real stdout is what a
 * pipe reads, including anything a library prints with console.log (an in-process run captures
 * only what Conclave writes to its io).
 */
function conclave(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', packagePath('src', 'cli', 'entry.ts'), ...args], {
      // From the package, where `--import tsx` resolves; every path given is absolute.
      cwd: packagePath(),
      env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The error Conclave gives for the proxy: the host, the request and the HTTP status, then the page's text. */
const proxyError = (): RegExp => new RegExp(`${proxyUrl.replace(/[.]/g, '\\.')} answered HTTP 502 Bad Gateway to (GET|POST) /api/\\w+(?: for \\S+)?: 502 Bad Gateway nginx`);

describe('a host behind a proxy that answers an HTML 502', () => {
  it('leaves hosts --json a JSON document on stdout, the error naming the host and the status', async () => {
    const r = await conclave(['hosts', '--hosts', hostsFile, '--json']);
    expect(r.code).toBe(3);
    const doc = JSON.parse(r.stdout) as { hosts: { url: string; ok: boolean; error: string | null }[] };
    expect(doc.hosts.map((h) => [h.url, h.ok])).toEqual([
      [sim.url, true],
      [proxyUrl, false],
    ]);
    expect(doc.hosts[1]!.error).toMatch(proxyError());
  }, 60_000);

  it('says what the lone host answered when a run cannot use it, not that it cannot be reached', async () => {
    const r = await conclave(['run', 'Q?', '--preset', 'tech-decision', '--host', proxyUrl, '--db', join(dir, 'lone.db')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(proxyError());
    expect(r.stderr).not.toContain('Cannot reach');
  }, 60_000);

  it('leaves models --json a JSON document on stdout', async () => {
    const r = await conclave(['models', '--hosts', hostsFile, '--json']);
    const doc = JSON.parse(r.stdout) as { hosts: { host: string; models: unknown[]; error?: string }[] };
    expect(doc.hosts[0]!.models.length).toBeGreaterThan(0);
    expect(doc.hosts[1]).toMatchObject({ host: proxyUrl, models: [] });
    expect(doc.hosts[1]!.error).toMatch(proxyError());
  }, 60_000);

  it('leaves --events one JSON event per line, and the debate runs on the host that works', async () => {
    const r = await conclave(['run', 'Should we do A?', '--preset', presetFile, '--hosts', hostsFile, '--db', join(dir, 'events.db'), '--events']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.pop()).toBe('');
    const events = lines.map((line) => JSON.parse(line) as { type: string; warnings?: string[] });
    expect(events[0]?.type).toBe('plan');
    expect(events.at(-1)).toMatchObject({ type: 'end', status: 'completed', exitCode: 0 });
    expect(events[0]!.warnings!.some((w) => proxyError().test(w))).toBe(true);
  }, 60_000);
});
