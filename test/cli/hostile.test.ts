import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimHandle, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { runCli } from '../helpers/cli.js';
import { agentOf, oneStance, roundOf, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

// Set the window title, clear the screen, colour, a C1 CSI, a DCS, HTML and Markdown that would link or break a table,
// then direction controls that make `tpecca TON od` read `do NOT accept` and an isolate left open.
const HOSTILE =
  'A \u001b]0;pwned\u0007 \u001b[2J \u001b[31mred\u001b[0m \u009b31mc1 \u001bPdcs\u001b\\ <script>alert(1)</script> ' +
  '<img src=x onerror=alert(1)> a|b `tick` [link](javascript:alert(1)) \u202etpecca TON od\u202c \u2067open \u200f';
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

let dir = '';
let db = '';
let presetFile = '';
let sim: SimHandle;
let debateId = '';

const cli = (args: string[]) => runCli(args, dir);

function expectInert(text: string): void {
  expect(text).not.toMatch(CONTROL);
  expect(text).not.toContain('pwned');
}

function hostileReply(req: SimRequest) {
  const agent = agentOf(req) ?? 'x';
  switch (stageOf(req)) {
    case 'opening':
      if (agent === 'c') return { status: 500, error: `runner crashed: ${HOSTILE}` };
      return JSON.stringify({ position: `${agent}: ${HOSTILE}`, reasoning: HOSTILE, confidence: 60 });
    case 'critique':
      return JSON.stringify({
        agreements: [],
        disagreements: [{ with: agent === 'a' ? 'b' : 'a', on: HOSTILE, reason: HOSTILE }],
        updatedPosition: `${agent} round ${roundOf(req)}: ${HOSTILE}`,
        confidence: 70,
      });
    case 'judge':
      return JSON.stringify({ rationale: HOSTILE, recommendation: 90, facts: 90, caveats: 90, ...oneStance(req) });
    case 'synthesis':
      return JSON.stringify({
        recommendation: HOSTILE,
        triggersToRevisit: [HOSTILE],
        confidence: { level: 'medium', converged: 2 },
        restsOn: ['a', 'b'],
        minorityPositions: [{ agent: 'a', round: 0, argument: HOSTILE, whyItMatters: HOSTILE }],
        failedAgents: [{ agent: 'c', reason: HOSTILE }],
      });
    default:
      return undefined;
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-hostile-'));
  db = join(dir, 'c.db');
  const preset = testPreset(['a', 'b', 'c'], { protocol: { maxRounds: 1, convergenceThreshold: 0.85, callTimeoutSeconds: 10, maxAnswerTokens: 900 } });
  presetFile = join(dir, 'panel.json');
  writeFileSync(presetFile, JSON.stringify(preset));
  sim = await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.9], hostileReply).respond });
});

afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('hostile model output', () => {
  it('reaches the live view and the card of run without a control character', async () => {
    const r = await cli(['run', `Q ${HOSTILE}`, '--preset', presetFile, '--host', sim.url, '--db', db]);
    expect(r.code).toBe(0);
    debateId = /Stored as (\S+) in/.exec(r.stderr)?.[1] ?? '';
    expect(debateId).not.toBe('');
    expectInert(r.stderr);
    expectInert(r.stdout);
    // The text itself is kept, only its controls go.
    expect(r.stderr).toContain('a (confidence 0.60, quality 100): a: A red c1 <script>alert(1)</script>');
    // Lines fit the terminal: a long one wraps at a space, so read it with its line breaks undone.
    expect(r.stderr.replace(/\n +/g, ' ')).toContain('failed on model-2:1b: runner crashed: A red c1 <script>');
    expect(r.stdout).toContain('RECOMMENDATION\n  A red c1 <script>alert(1)</script>');
    // Direction controls are shown, not applied.
    expect(r.stdout).toContain('<U+202E>tpecca TON od<U+202C> <U+2067>open <U+200F>');
  });

  it('is inert in the JSON document, which parses back to the exact recorded text', async () => {
    const r = await cli(['run', 'Q', '--preset', presetFile, '--host', sim.url, '--db', db, '--json', '--quiet']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(CONTROL);
    const doc = JSON.parse(r.stdout) as { synthesis: { synthesis: { recommendation: string } } };
    expect(doc.synthesis.synthesis.recommendation).toBe(HOSTILE);
    const shown = await cli(['show', debateId, '--db', db, '--json']);
    expect(shown.stdout).not.toMatch(CONTROL);
    expect(JSON.stringify(JSON.parse(shown.stdout))).toContain('\\u001b]0;pwned\\u0007');
  });

  it('is inert and escaped in show and export as Markdown', async () => {
    const shown = await cli(['show', debateId, '--db', db]);
    const out = join(dir, 'debate.md');
    const exported = await cli(['export', debateId, '--db', db, '--format', 'md', '--out', out]);
    expect(shown.code).toBe(0);
    expect(exported.code).toBe(0);
    const md = readFileSync(out, 'utf8');
    expect(md).toBe(shown.stdout);
    expectInert(md);
    expect(md).not.toMatch(/<script|<img|(?<!\\)\[link/);
    expect(md).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt; a\\|b \\`tick\\` \\[link](javascript:alert(1))');
    // The question heading and the failed call's server error are escaped too.
    expect(md).toMatch(/^# Q A {3}red c1 {2}&lt;script&gt;/);
    expect(md).toContain('runner crashed: A ');
    expect(md).toContain('&lt;U+202E&gt;tpecca TON od&lt;U+202C&gt;');
  });

  it('is inert in replay, in list and in the error that quotes it', async () => {
    const replayed = await cli(['replay', debateId, '--db', db]);
    expect(replayed.code).toBe(0);
    expectInert(replayed.stdout);
    expect(replayed.stderr).toBe('');
    expect(replayed.stdout).toContain('judge: convergence 0.90');

    const listed = await cli(['list', '--db', db]);
    expect(listed.code).toBe(0);
    expectInert(listed.stdout);
    expect(listed.stdout).toContain('Q A   red c1');

    const missing = await cli(['show', HOSTILE, '--db', db]);
    expect(missing.code).toBe(4);
    expectInert(missing.stderr);
    expect(missing.stderr).toContain('<script>alert(1)</script>');
  });
});

describe('hostile server text', () => {
  it('is inert in hosts and models, which print model names the server chose', async () => {
    const evil = await startSimulator({ models: [{ name: `evil\u001b]0;pwned\u0007\u001b[2J<b>:1b` }, { name: 'plain:1b' }] });
    try {
      for (const args of [['hosts', '--host', evil.url], ['models', '--host', evil.url]]) {
        const r = await cli(args);
        expect(r.code).toBe(0);
        expectInert(r.stdout);
        expectInert(r.stderr);
        expect(r.stdout).toContain('evil<b>:1b');
      }
    } finally {
      await evil.close();
    }
  });
});
