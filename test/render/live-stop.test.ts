import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { liveRenderer } from '../../src/render/live.js';

describe('the live view when the user stops a run', () => {
  it('clears the rows of calls in flight and says they were cancelled, drawing them no more', () => {
    const out = new PassThrough();
    let written = '';
    out.on('data', (d: Buffer) => (written += d.toString()));
    const view = liveRenderer(out, { color: false, live: true, columns: 80 }, { now: () => 0 });
    for (const agentId of ['a', 'b']) view({ type: 'turn.started', stage: 'critique', round: 1, agentId, model: 'm:1b', attempt: 0, at: 0 });
    view({ type: 'round.started', round: 2, at: 0 });
    expect(written).toContain('a critiquing');
    const before = written.length;
    view({ type: 'debate.exit', reason: 'interrupted', round: 1, detail: 'stopped by the user', at: 0 });
    view.close();
    const after = written.slice(before);
    expect(after).toContain('Stopped: ');
    expect(after).toContain('the calls in flight were cancelled');
    // After the stop line, no row says a call is still running.
    expect(after.slice(after.indexOf('Stopped: '))).not.toContain('critiquing');
  });
});
