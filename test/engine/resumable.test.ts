import { describe, expect, it } from 'vitest';

describe('how a stopped run is told to go on', () => {
  it('names conclave resume for a protocol that can go on from a stored point, and a new run for one that cannot', async () => {
    const { goOnHint } = await import('../../src/engine/resumable.js');
    expect(goOnHint('debate', 'X', null)).toBe('Go on from where it stopped with `conclave resume X`; see what it got to with `conclave show X`.');
    expect(goOnHint('oxford', 'X', 'Start the server again (`ollama serve`)')).toBe(
      'Start the server again (`ollama serve`), then go on from where it stopped with `conclave resume X` (add --host URL to go on with another server); see what it got to with `conclave show X`.',
    );
    const { resumableList } = await import('../../src/engine/resumable.js');
    expect(resumableList()).toBe('debate, parallel, oxford and delphi');
    for (const kind of ['tournament', 'decompose', 'pipeline']) {
      const hint = goOnHint(kind, 'X', 'Start the server again (`ollama serve`)');
      expect(hint).not.toContain('conclave resume');
      expect(hint).toContain(`the ${kind} protocol cannot go on from a stored point`);
    }
  });
});
