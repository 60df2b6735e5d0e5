import { describe, expect, it } from 'vitest';
import { chooseNumCtx, fitPeers } from '../../src/protocol/context.js';
import { convergenceOf, exitDecision, scoreVerdict } from '../../src/protocol/convergence.js';
import { critiqueSchema, critiqueSchemaFor, formatSchemaOf, judgeSchema, synthesisSchemaFor } from '../../src/protocol/schemas.js';
import { parseReply } from '../../src/engine/structured-call.js';
import { normalizeHost, resolveHost } from '../../src/ollama/host.js';

describe('convergence and exit', () => {
  it('averages the three judge axes', () => {
    expect(convergenceOf({ recommendation: 1, facts: 0.5, caveats: 0 })).toBeCloseTo(0.5, 12);
  });

  it('exits at the threshold, not just above it, and at the round ceiling otherwise', () => {
    expect(exitDecision({ round: 1, maxRounds: 4, convergence: 0.85, threshold: 0.85 })?.reason).toBe('converged');
    expect(exitDecision({ round: 1, maxRounds: 4, convergence: 0.8499, threshold: 0.85 })).toBeNull();
    expect(exitDecision({ round: 4, maxRounds: 4, convergence: 0.1, threshold: 0.85 })?.reason).toBe('max_rounds');
  });

  it('converges on every whole-percent judge score whose mean reaches the threshold, and on no other', () => {
    // The judge answers whole percents, read as fractions: 70, 70 and 70 average to 0.6999999999999998 in floating point.
    const read = (p: number) => judgeSchema.shape.recommendation.parse(p);
    const wrong: string[] = [];
    for (const t of [70, 85, 95]) {
      for (let a = 0; a <= 100; a++) {
        for (let b = 0; b <= 100; b++) {
          for (let c = 0; c <= 100; c++) {
            const converged = exitDecision({ round: 1, maxRounds: 4, convergence: convergenceOf({ recommendation: read(a), facts: read(b), caveats: read(c) }), threshold: t / 100 })?.reason === 'converged';
            if (converged !== a + b + c >= 3 * t && wrong.length < 5) wrong.push(`${a}/${b}/${c} at ${t}%`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('reads a score at the threshold over stances that split the panel as split, which the exit does not take as convergence', () => {
    const at = { round: 1, maxRounds: 4, convergence: 0.9, threshold: 0.85 };
    expect(scoreVerdict({ ...at, stanceSizes: [1, 1, 1] })).toBe('split');
    expect(exitDecision({ ...at, stanceSizes: [1, 1, 1] })).toBeNull();
    expect(scoreVerdict({ ...at, stanceSizes: [2, 1] })).toBe('converged');
    expect(exitDecision({ ...at, stanceSizes: [2, 1] })?.reason).toBe('converged');
    expect(scoreVerdict({ ...at, convergence: 0.8, stanceSizes: [1, 1, 1] })).toBeNull();
    expect(scoreVerdict({ ...at, convergence: null })).toBeNull();
  });

  it('never exits early on a round the judge could not score', () => {
    expect(exitDecision({ round: 2, maxRounds: 4, convergence: null, threshold: 0 })).toBeNull();
  });
});

describe('context sizing', () => {
  it('rounds num_ctx up to 2048 steps, at least 4096, capped by the model', () => {
    expect(chooseNumCtx(100, null)).toBe(4096);
    expect(chooseNumCtx(5000, null)).toBe(6144);
    expect(chooseNumCtx(50_000, 8192)).toBe(8192);
  });

  it('leaves peers whole when they fit and shortens only the long ones when they do not', () => {
    const peers = [
      { agentId: 'a', position: 'short answer' },
      { agentId: 'b', position: 'x'.repeat(7000) },
    ];
    expect(fitPeers(100, peers, 10_000)).toEqual({ peers, droppedChars: 0 });
    const fit = fitPeers(100, peers, 1200)!;
    expect(fit.peers[0]).toEqual(peers[0]);
    expect(fit.peers[1]!.shortened).toBe(true);
    expect(fit.peers[1]!.position.length).toBeLessThan(7000);
    expect(fit.droppedChars).toBe(7000 - fit.peers[1]!.position.length);
  });

  it('gives up when even empty peers would not fit', () => {
    expect(fitPeers(1000, [{ agentId: 'a', position: 'x' }], 1000)).toBeNull();
  });
});

describe('structured replies', () => {
  it('sends a JSON Schema without keywords Ollama refuses', () => {
    const text = JSON.stringify(formatSchemaOf(critiqueSchema));
    expect(text).not.toContain('"pattern"');
    expect(text).not.toContain('$schema');
    expect(formatSchemaOf(judgeSchema)).toMatchObject({ type: 'object', required: ['rationale', 'recommendation', 'facts', 'caveats'] });
  });

  it('reads the reply after a <think> block in the content, whose draft braces are not the reply', () => {
    const parsed = parseReply('<think>Draft: {"rationale": "maybe", "recommendation": 10}</think>\n{"rationale":"r","recommendation":80,"facts":70,"caveats":60}', judgeSchema);
    expect(parsed.ok && parsed.value).toMatchObject({ rationale: 'r', recommendation: 0.8, facts: 0.7, caveats: 0.6 });
    // With nothing usable after the block, the whole text is read as before.
    const inside = parseReply('<think>{"rationale":"r","recommendation":80,"facts":70,"caveats":60}</think>', judgeSchema);
    expect(inside.ok).toBe(true);
  });

  it('takes JSON wrapped in prose or code fences', () => {
    const parsed = parseReply('Sure:\n```json\n{"rationale":"r","recommendation":100,"facts":100,"caveats":50}\n```', judgeSchema);
    expect(parsed.ok).toBe(true);
  });

  it('reads a judge\'s integer scores from 0 to 100 on the engine\'s 0-to-1 scale', () => {
    const parsed = parseReply('{"rationale":"r","recommendation":41,"facts":100,"caveats":0}', judgeSchema);
    expect(parsed.ok && parsed.value).toMatchObject({ recommendation: 0.41, facts: 1, caveats: 0 });
  });

  it('never takes a number that is not finite or out of range as the top of the range: it names the field and value for the repair', () => {
    const infinite = parseReply('{"rationale":"r","recommendation":1e999,"facts":1,"caveats":1}', judgeSchema);
    expect(infinite.ok).toBe(false);
    if (!infinite.ok) expect(infinite.problem).toMatch(/recommendation is not a finite number \(JSON reads an exponent as large as 1e999 as Infinity\).*from 0 to 100/);
    const over = parseReply('{"rationale":"r","recommendation":41,"facts":101,"caveats":1}', judgeSchema);
    expect(over.ok).toBe(false);
    if (!over.ok) expect(over.problem).toMatch(/facts is 101, outside its range from 0 to 100/);
    const fraction = parseReply('{"rationale":"r","recommendation":0.9,"facts":1,"caveats":1}', judgeSchema);
    expect(fraction.ok).toBe(false);
  });

  it('sends every score as an integer with bounds the grammar enforces', () => {
    const judge = formatSchemaOf(judgeSchema) as { properties: Record<string, unknown> };
    for (const axis of ['recommendation', 'facts', 'caveats']) expect(judge.properties[axis]).toMatchObject({ type: 'integer', minimum: 0, maximum: 100 });
    // Free text the judge writes is bounded for the grammar, so the reply fits its num_predict.
    expect(formatSchemaOf(judgeSchema)).toMatchObject({ properties: { rationale: { type: 'string', maxLength: 600 } } });
    expect(parseReply(JSON.stringify({ rationale: '😀'.repeat(600), recommendation: 100, facts: 100, caveats: 100 }), judgeSchema).ok).toBe(true);
    const synthesis = formatSchemaOf(synthesisSchemaFor(['a', 'b', 'c'], 2)) as { properties: Record<string, any> };
    expect(synthesis.properties.confidence.properties.converged).toMatchObject({ type: 'integer', minimum: 0, maximum: 3 });
    expect(synthesis.properties.minorityPositions.items.properties.round).toMatchObject({ type: 'integer', maximum: 2 });
    expect(synthesis.properties.minorityPositions.items.properties.agent.enum).toEqual(['a', 'b', 'c']);
  });

  it('explains what is wrong with a reply that breaks the schema sent, for the repair request', () => {
    const parsed = parseReply('{"recommendation":"high","facts":1,"caveats":0.5,"rationale":"r"}', judgeSchema);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(/does not match the required fields[\s\S]*recommendation/);
  });

  it('builds one schema per peer list and reuses it', () => {
    expect(critiqueSchemaFor(['a', 'b'])).toBe(critiqueSchemaFor(['a', 'b']));
    expect(critiqueSchemaFor(['a', 'b'])).not.toBe(critiqueSchemaFor(['a', 'c']));
    const sent = formatSchemaOf(critiqueSchemaFor(['a', 'b'])) as { properties: Record<string, any> };
    expect(sent.properties.agreements.items.properties.with.enum).toEqual(['a', 'b']);
    expect(formatSchemaOf(critiqueSchemaFor([], ['x']))).toMatchObject({ properties: { disagreements: { items: { properties: { with: { enum: ['x'] } } } } } });
  });
});

describe('hosts', () => {
  it('reads hosts the way OLLAMA_HOST is read: default port 11434, bare port means loopback', () => {
    expect(normalizeHost('127.0.0.1')).toBe('http://127.0.0.1:11434');
    expect(normalizeHost(':5000')).toBe('http://127.0.0.1:5000');
    expect(normalizeHost('http://gpu-box')).toBe('http://gpu-box:11434');
    expect(normalizeHost('0.0.0.0:11434')).toBe('http://127.0.0.1:11434');
  });

  it('prefers --host over OLLAMA_HOST over the default', () => {
    expect(resolveHost(undefined, {})).toBe('http://127.0.0.1:11434');
    expect(resolveHost(undefined, { OLLAMA_HOST: 'box:1234' })).toBe('http://box:1234');
    expect(resolveHost('other:1', { OLLAMA_HOST: 'box:1234' })).toBe('http://other:1');
  });
});

describe('the synthesis prompt', () => {
  it('asks for an answer to act on without inviting the synthesizer to smooth a split panel into a consensus', async () => {
    const { synthesisMessages } = await import('../../src/protocol/prompts.js');
    const prompt = synthesisMessages('Q?', 'transcript', ['a', 'b'], []).at(-1)!.content;
    expect(prompt).not.toContain('stated so someone can act on it');
    expect(prompt).toContain('Where the panel is split on a point the answer depends on, say so in the recommendation');
    expect(prompt).toContain('do not smooth a disagreement into a consensus');
  });
});
