import { afterEach, describe, expect, it } from 'vitest';
import { benchAnswerSchemaFor } from '../../src/bench/prompts.js';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { formatSchemaOf, optionalBeforeRequired } from '../../src/protocol/grammar.js';
import { critiqueSchemaFor, synthesisSchemaFor } from '../../src/protocol/schemas.js';
import { clashFormatFor } from '../../src/protocol/tensions.js';
import { voteSchema } from '../../src/protocol/vote-prompts.js';
import { type SimHandle, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { contractPanel, pipelineContractPanel, simModels, testPreset } from '../helpers/panel.js';

let sim: SimHandle | null = null;
afterEach(async () => {
  await sim?.close();
  sim = null;
});

type Preset = ReturnType<typeof testPreset>;

/** Every `format` a run of the preset sends, answered by the simulator's own schema-valid replies. */
async function formatsSent(preset: Preset, extraModels: string[] = []): Promise<{ stage: string; format: unknown }[]> {
  const sent: { stage: string; format: unknown }[] = [];
  sim = await startSimulator({
    models: [...simModels(preset), ...extraModels.map((name) => ({ name, contextLength: 32768 }))],
    respond: (req) => {
      if (req.format && typeof req.format === 'object') sent.push({ stage: Object.keys((req.format as { properties?: object }).properties ?? {}).join(','), format: req.format });
      return {};
    },
  });
  const store = openStore(':memory:');
  try {
    await runDebate({ question: 'Should we move the service to Postgres?', preset, host: sim.url, recorder: recorder(store) }).catch(() => undefined);
  } finally {
    store.close();
    await sim.close();
    sim = null;
  }
  return sent;
}

const kinds = (kind: string, extra: object = {}) => testPreset(['a', 'b', 'c', 'd'], { protocol: { kind, maxRounds: 2, callTimeoutSeconds: 30, ...extra } } as never);

describe('the declared order of every schema is the order the grammar writes', () => {
  it('finds an optional property declared before a required one, at any depth', () => {
    expect(optionalBeforeRequired({ type: 'object', properties: { reason: { type: 'string' }, vote: { enum: ['YES', 'NO'] } }, required: ['vote'] })).toEqual([
      '$: optional reason is declared before required vote',
    ]);
    expect(optionalBeforeRequired({ type: 'object', properties: { list: { type: 'array', items: { type: 'object', properties: { a: {}, b: {} }, required: ['b'] } } }, required: ['list'] })).toEqual([
      '$.list.items: optional a is declared before required b',
    ]);
  });

  it('holds for every schema sent by every stage of every protocol', async () => {
    const runs: [string, Preset, string[]][] = [
      ['debate with tension map, targeted exchange and vote', contractPanel(), []],
      ['parallel', kinds('parallel'), []],
      ['tournament', kinds('tournament'), []],
      ['oxford', kinds('oxford'), []],
      ['decompose', kinds('decompose'), []],
      ['pipeline (list)', pipelineContractPanel('list'), []],
      ['pipeline (artifact)', pipelineContractPanel('artifact'), []],
      ['auto', kinds('auto', { advisor: 'advisor:1b' }), ['advisor:1b']],
    ];
    const stages = new Set<string>();
    const problems: string[] = [];
    for (const [name, preset, extra] of runs) {
      const sent = await formatsSent(preset, extra);
      expect(sent.length, name).toBeGreaterThan(0);
      for (const { stage, format } of sent) {
        stages.add(stage);
        for (const p of optionalBeforeRequired(format)) problems.push(`${name}, {${stage}}: ${p}`);
      }
    }
    // What is built per call but may not come up in a run of random replies: clash updates, collisions, bench answers, the vote.
    const built = {
      critiqueWithClashes: critiqueSchemaFor(['b', 'c'], [], ['T1', 'T2']),
      synthesisWithCollisions: synthesisSchemaFor(['a', 'b', 'c'], 2, ['C1']),
      vote: voteSchema,
      benchNumber: benchAnswerSchemaFor('number', 0),
      benchChoice: benchAnswerSchemaFor('choice', 4),
      benchText: benchAnswerSchemaFor('text', 0),
    };
    for (const [name, schema] of Object.entries(built)) for (const p of optionalBeforeRequired(formatSchemaOf(schema))) problems.push(`${name}: ${p}`);
    expect(problems).toEqual([]);
    // The runs reached the stages whose order matters most.
    const seen = [...stages].join('\n');
    for (const field of ['rationale,recommendation,facts,caveats', 'reason,vote', 'updatedPosition', 'clashes', 'winner', 'subQuestions', 'observations', 'triggersToRevisit']) expect(seen).toContain(field);
  }, 120_000);

  it('holds a clash to a listed pair, one claim from each side, so the grammar cannot pit two claims of one panelist', () => {
    const sent = formatSchemaOf(clashFormatFor([[['C1', 'C2'], ['C3']]])) as { properties: { clashes: { items: { anyOf: { properties: { claimA: { enum: string[] }; claimB: { enum: string[] } } }[] } } } };
    expect(sent.properties.clashes.items.anyOf.map((b) => [b.properties.claimA.enum, b.properties.claimB.enum])).toEqual([
      [['C1', 'C2'], ['C3']],
      [['C3'], ['C1', 'C2']],
    ]);
  });

  it('asks for the reason before the vote, and lets it be empty', () => {
    const vote = formatSchemaOf(voteSchema) as { properties: object; required: string[] };
    expect(Object.keys(vote.properties)).toEqual(['reason', 'vote']);
    expect(vote.required).toEqual(['reason', 'vote']);
    expect(voteSchema.safeParse({ reason: '', vote: 'NO' }).success).toBe(true);
  });
});
