import { afterEach, describe, expect, it } from 'vitest';
import type { DebateEvent } from '../../src/engine/events.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { renderCard } from '../../src/render/card.js';
import { debateDocument } from '../../src/render/document.js';
import { liveRenderer } from '../../src/render/live.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { storedEvents } from '../../src/render/replay.js';
import { plainStyle } from '../../src/render/style.js';
import { debatePage } from '../../src/serve/debate-page.js';
import { type SimHandle, type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { capture } from '../helpers/cli.js';
import { agentOf, isRetry, reply, scriptedResponder, simModels, stageOf, subQuestionOf, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
let store: Store | null = null;

afterEach(async () => {
  store?.close();
  store = null;
  await sim?.close();
  sim = null;
});

async function setup(agentIds: string[], protocol: Record<string, unknown>, override: (req: SimRequest) => SimReply | undefined, constraints: string[] = []) {
  const preset = testPreset(agentIds, {
    protocol: { maxRounds: 1, convergenceThreshold: 0.85, callTimeoutSeconds: 10, ...protocol } as never,
    ...(constraints.length > 0 ? { constraints } : {}),
  });
  const script = scriptedResponder([0.2], override);
  sim = await startSimulator({ models: simModels(preset), respond: script.respond });
  store = openStore(':memory:');
  const events: DebateEvent[] = [];
  const live = capture(120);
  const view = liveRenderer(live, plainStyle);
  const result = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), listeners: [(e) => events.push(e), view] });
  view.close();
  return { result, seen: script.seen, events, live: live.text, store };
}

const prompt = (req: SimRequest): string => req.messages.map((m) => m.content).join('\n');

describe('quality indicators over a debate', () => {
  it('asks a weak critique again with the question alone, keeps the retry, and leaves a rejected answer out of every later prompt', async () => {
    const { result, seen, events, live, store } = await setup(['a', 'b', 'c'], {}, (req) => {
      const agent = agentOf(req);
      if (agent === 'c') return reply.rejected('Zanzibar', stageOf(req) === 'critique' ? 'critique' : 'opening');
      if (agent === 'b' && isRetry(req)) return reply.opening('b', 'b retried: do A in two steps');
      if (agent === 'b' && stageOf(req) === 'critique') return reply.weakCritique();
      return undefined;
    });
    expect(result.status).toBe('completed');

    // The retry carries the question and b's persona, and no peer's answer.
    const retries = seen.filter(isRetry);
    expect(retries.map(agentOf)).toEqual(['b']);
    const retry = prompt(retries[0]!);
    expect(retry).toContain('Should we do A?');
    expect(retry).toContain('You are agent b.');
    for (const peerText of ['a says A', 'a reasons', '[a]', 'Zanzibar']) expect(retry).not.toContain(peerText);
    const critiqueOfB = seen.find((r) => agentOf(r) === 'b' && stageOf(r) === 'critique')!;
    expect(prompt(critiqueOfB)).toContain('a says A');

    // c's rejected answer reaches no peer, no judge and not the synthesizer.
    const later = seen.filter((r) => agentOf(r) !== 'c' && stageOf(r) !== 'opening');
    expect(later.map(stageOf)).toEqual(expect.arrayContaining(['critique', 'judge', 'synthesis']));
    for (const req of later) expect(prompt(req)).not.toContain('Zanzibar');
    const synthesis = prompt(seen.find((r) => stageOf(r) === 'synthesis')!);
    expect(synthesis).toMatch(/c[^\n]*rejected by the quality check \(score 10\)/);

    const d = store.getDebate(result.id);
    // c's seat got the orchestrator's fallback twice, and the simulated panel answered it as c: rejected too, so the seat stayed empty.
    expect(d.quality!.filter((q) => q.stage === 'fallback').map((q) => [q.round, q.agentId, q.action])).toEqual([
      [0, 'c', 'REJECT'],
      [1, 'c', 'REJECT'],
    ]);
    expect(d.quality!.filter((q) => q.stage !== 'fallback')).toEqual([
      expect.objectContaining({ stage: 'opening', round: 0, agentId: 'a', try: 0, score: 100, action: 'PASS' }),
      expect.objectContaining({ stage: 'opening', round: 0, agentId: 'b', try: 0, score: 100, action: 'PASS' }),
      expect.objectContaining({ stage: 'opening', round: 0, agentId: 'c', try: 0, score: 0, action: 'REJECT' }),
      expect.objectContaining({ stage: 'critique', round: 1, agentId: 'a', try: 0, action: 'PASS' }),
      expect.objectContaining({ stage: 'critique', round: 1, agentId: 'b', try: 0, score: 45, action: 'RETRY' }),
      expect.objectContaining({ stage: 'critique', round: 1, agentId: 'b', try: 1, score: 100, action: 'PASS' }),
      expect.objectContaining({ stage: 'critique', round: 1, agentId: 'c', try: 0, score: 10, action: 'REJECT' }),
    ]);
    expect(d.quality!.find((q) => q.agentId === 'c')!.reasons).toContain('the reply was cut off at num_predict (−35)');
    const bTurn = d.turns.find((t) => t.round === 1 && t.agentId === 'b')!;
    expect(bTurn).toMatchObject({ status: 'ok', position: 'b retried: do A in two steps', critique: { agreements: [], disagreements: [] } });
    expect(d.calls.filter((c) => c.agentId === 'b' && c.stage === 'critique').map((c) => c.attempt)).toEqual([0, 2]);
    const cTurns = d.turns.filter((t) => t.agentId === 'c');
    expect(cTurns.map((t) => t.status)).toEqual(['failed', 'failed']);
    expect(cTurns[0]!.error).toMatch(/^rejected by the quality check \(score 0\): /);
    // The rejected reply itself stays in the record.
    expect(d.calls.filter((c) => c.agentId === 'c' && c.stage !== 'fallback').every((c) => c.raw.includes('Zanzibar'))).toBe(true);
    expect(store.verifyDebate(result.id).state).toBe('sealed');

    // Warnings, live and in every view.
    const warnings = events.flatMap((e) => (e.type === 'warning' ? [e.message] : []));
    expect(warnings).toEqual(
      expect.arrayContaining([
        'c, opening 0: quality 0 (REJECT), its answer is left out; peers and the synthesis do not read it',
        'b, critique 1: quality 45 (RETRY), asking again once with the question alone',
      ]),
    );
    expect(live).toContain('warning: c, opening 0: quality 0 (REJECT), its answer is left out');
    // The live view fits the terminal: a long line wraps, so read it with its line breaks undone.
    expect(live.replace(/\n +/g, ' ')).toContain('◆ c answer, round 0: quality 0 REJECT (left out): the reply was cut off at num_predict (−35); the position is one word');
    expect(live).toContain('◆ b critique, round 1: quality 45 RETRY (asked again)');
    expect(live).toMatch(/b \(confidence 0\.60, quality 100\): b retried: do A in two steps/);
    const card = renderCard(d);
    expect(card).toContain('QUALITY\n  8 results rated, mean score 51: 4 pass, 0 warn, 1 retried, 4 rejected');
    expect(card).toContain("- c answer, round 0: 0 REJECT (the reply was cut off at num_predict (−35)");
    expect(card).toMatch(/- b critique, round 1: 100 PASS after a retry/);
    const md = renderMarkdown(d);
    expect(md).toContain('## Quality');
    expect(md).toMatch(/### b \(`model-1:1b`\), confidence 0\.60, quality 100 PASS after a retry/);
    expect(debateDocument(d).quality).toEqual(d.quality);
    const replay = capture(120);
    const view = liveRenderer(replay, plainStyle);
    for (const e of storedEvents(d)) view(e);
    expect(replay.text).toContain('◆ c answer, round 0: quality 0 REJECT (left out)');
    expect(debatePage(d, null)).toMatch(/<h2>Quality<\/h2>[\s\S]*<td>critique 1<\/td><td>retry<\/td><td class="num">100<\/td><td>PASS<\/td>/);
  });

  it('keeps control characters and markup in recorded agent ids out of the card, the Markdown and the web page quality sections', async () => {
    const { result, store } = await setup(['a', 'b', 'c'], { kind: 'parallel' }, (req) =>
      agentOf(req) === 'c' && stageOf(req) === 'opening' && !isRetry(req) ? reply.weak() : undefined,
    );
    const d = store.getDebate(result.id);
    expect(d.quality!.filter((q) => q.agentId === 'c').map((q) => [q.try, q.action])).toEqual([[0, 'RETRY'], [1, 'PASS']]);
    const hostile = { ...d, quality: d.quality!.map((q) => ({ ...q, agentId: '<b>x</b>\u001b[2J' })) };
    expect(renderMarkdown(hostile)).not.toContain('<b>x</b>');
    expect(renderCard(hostile)).toContain('QUALITY');
    expect(renderCard(hostile)).not.toContain('\u001b');
    expect(debatePage(hostile, null)).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(debatePage(hostile, null)).not.toContain('<b>x</b>');
  });
});

describe('after a retry', () => {
  it('keeps a retry that is weak again as WARN, and the first answer as WARN when the retry gets no reply', async () => {
    const { result, seen, events, store } = await setup(['a', 'b', 'c'], { kind: 'parallel' }, (req) => {
      if (stageOf(req) !== 'opening') return undefined;
      if (agentOf(req) === 'b') return isRetry(req) ? { error: 'model runner has unexpectedly stopped', status: 500 } : reply.weak();
      if (agentOf(req) === 'c') return reply.weak();
      return undefined;
    });
    expect(result.status).toBe('completed');
    // b's retry meets a crashed runner each time: sent once and resent twice.
    expect(seen.filter(isRetry).map(agentOf).sort()).toEqual(['b', 'b', 'b', 'c']);
    const d = store.getDebate(result.id);
    const final = (agent: string) => d.quality!.filter((q) => q.agentId === agent).at(-1)!;
    expect(final('c')).toMatchObject({ try: 1, score: 35, action: 'WARN' });
    expect(final('c').reasons.at(-1)).toBe('kept after its one retry');
    expect(final('b')).toMatchObject({ try: 1, score: 35, action: 'WARN' });
    expect(final('b').reasons.at(-1)).toMatch(/^its retry got no usable reply \(.*model runner has unexpectedly stopped.*\); the first reply is kept$/);
    expect(d.turns.filter((t) => t.status === 'ok').map((t) => t.agentId)).toEqual(['a', 'b', 'c']);
    expect(d.turns.find((t) => t.agentId === 'b')!.position).toBe('Maybe');
    // Both are kept with a score under 50: a low-quality warning each.
    const low = events.flatMap((e) => (e.type === 'warning' && e.message.includes('low quality score (35)') ? [e.message] : []));
    expect(low.sort()).toEqual(['b, opening 0: low quality score (35), the answer may lack depth', 'c, opening 0: low quality score (35), the answer may lack depth']);
  });
});

describe('quality indicators in the other protocols', () => {
  it('retries an opening of parallel answers with the question alone', async () => {
    const { result, seen, store } = await setup(['a', 'b'], { kind: 'parallel' }, (req) => (agentOf(req) === 'b' && !isRetry(req) && stageOf(req) === 'opening' ? reply.weak() : undefined));
    expect(result.status).toBe('completed');
    expect(seen.filter(isRetry).map(agentOf)).toEqual(['b']);
    expect(prompt(seen.find((r) => stageOf(r) === 'synthesis')!)).toContain('b says A');
    expect(prompt(seen.find((r) => stageOf(r) === 'synthesis')!)).not.toContain('Maybe');
    expect(store.getDebate(result.id).quality!.map((q) => `${q.agentId}:${q.try}:${q.action}`)).toEqual(['a:0:PASS', 'b:0:RETRY', 'b:1:PASS']);
  });

  it('carries the user\'s constraints in every retry prompt, as in the request it retries', async () => {
    const rule = 'Stay within a budget of 10k euros';
    for (const kind of ['debate', 'parallel']) {
      const { seen } = await setup(['a', 'b'], { kind }, (req) => {
        if (agentOf(req) !== 'b' || isRetry(req)) return undefined;
        if (kind === 'debate' && stageOf(req) === 'critique') return reply.weakCritique();
        if (kind === 'parallel' && stageOf(req) === 'opening') return reply.weak();
        return undefined;
      }, [rule]);
      const retries = seen.filter(isRetry);
      expect(retries.map(agentOf)).toEqual(['b']);
      expect(prompt(retries[0]!)).toContain(rule);
      for (const req of seen.filter((r) => agentOf(r) === 'b')) expect(prompt(req)).toContain(rule);
      await sim?.close();
      sim = null;
      store?.close();
      store = null;
    }
  });

  it("retries a weak sub-answer without the answers it depended on, and rejects one (and the decomposer's fallback for it) that is left out of the reassembly", async () => {
    const { result, seen, store } = await setup(['lead', 'w1', 'w2'], { kind: 'decompose' }, (req) => {
      if (stageOf(req) === 'split') return reply.split([{ question: 'part one?', dependsOn: [] }, { question: 'part two?', dependsOn: [1] }, { question: 'part three?', dependsOn: [] }]);
      if (stageOf(req) !== 'subanswer') return undefined;
      const sub = subQuestionOf(req);
      if (sub === 1) return reply.opening(agentOf(req)!, 'part one answered with Quokka');
      if (sub === 2 && !isRetry(req)) return reply.weak();
      if (sub === 3) return reply.rejected('Zanzibar');
      return undefined;
    });
    expect(result.status).toBe('completed');
    const first = seen.find((r) => subQuestionOf(r) === 2 && !isRetry(r))!;
    const retry = seen.find((r) => subQuestionOf(r) === 2 && isRetry(r))!;
    expect(prompt(first)).toContain('Quokka');
    expect(prompt(retry)).toContain('Yours is sub-question 2: part two?');
    expect(prompt(retry)).not.toContain('Quokka');
    const reassembly = prompt(seen.at(-1)!);
    expect(reassembly).not.toContain('Zanzibar');
    expect(reassembly).toMatch(/sub-question 3 .*failed: rejected by the quality check.*the fallback by lead failed too/);
    const ratings = store.getDebate(result.id).quality!;
    // Part 3's assignee is rejected, then the decomposer's fallback for it, which says the same.
    expect(ratings.filter((q) => q.stage === 'subanswer').map((q) => `${q.round}:${q.agentId}:${q.try}:${q.action}`).sort()).toEqual(['1:w1:0:PASS', '2:w2:0:RETRY', '2:w2:1:PASS', '3:lead:0:REJECT', '3:w1:0:REJECT']);
  });

  it('rates tournament answers and critiques', async () => {
    const { result, store } = await setup(['a', 'b', 'c', 'd'], { kind: 'tournament' }, () => undefined);
    const ratings = store.getDebate(result.id).quality!;
    expect(ratings.filter((q) => q.stage === 'opening')).toHaveLength(4);
    expect(ratings.filter((q) => q.stage === 'critique')).toHaveLength(6);
  });
});
