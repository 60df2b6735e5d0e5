import { describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import type { ConclaveError } from '../../src/errors.js';
import { startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { scriptedResponder, simModels, testPreset } from '../helpers/panel.js';

const track = closesAfterEach();

describe('an opening prompt that cannot fit', () => {
  it('counts long constraints in what the prompt needs and names them as what to shorten, before anything is recorded', async () => {
    const preset = { ...testPreset(['a', 'b']), constraints: ['Every table keeps its history. '.repeat(40000)] };
    const sim = track(await startSimulator({ models: simModels(preset), respond: scriptedResponder([0.9]).respond }));
    const store = track(openStore(':memory:'));
    const err = (await runDebate({ question: 'Q?', preset, host: sim.url, recorder: recorder(store) }).catch((e: unknown) => e)) as ConclaveError;
    expect(err.code).toBe('PROMPT_TOO_LONG');
    const need = Number(/needs about ([\d,]+) tokens/.exec(err.message)![1]!.replace(/,/g, ''));
    const constraints = Number(/constraints ([\d,]+)/.exec(err.message)![1]!.replace(/,/g, ''));
    // The question is two characters: what the prompt needs is mostly the constraints, counted there, not taken from the room.
    expect(constraints).toBeGreaterThan(need / 2);
    expect(err.message).toMatch(/has room for [1-9][\d,]* at num_ctx/);
    expect(err.hint).toContain('Shorten the constraints');
    expect(store.listDebates()).toEqual([]);
  });
});
