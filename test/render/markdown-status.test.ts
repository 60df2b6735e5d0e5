import { describe, expect, it } from 'vitest';
import { recorder } from '../../src/engine/recorder.js';
import { runDebate } from '../../src/engine/run-debate.js';
import { InterruptedError } from '../../src/errors.js';
import { exitText, exitTextBeside } from '../../src/render/exit.js';
import { renderCard } from '../../src/render/card.js';
import { renderMarkdown } from '../../src/render/markdown.js';
import { type SimReply, type SimRequest, startSimulator } from '../../src/sim/index.js';
import { openStore } from '../../src/store/open.js';
import { closesAfterEach } from '../helpers/lifecycle.js';
import { agentOf, reply, scriptedResponder, simModels, stageOf, testPreset } from '../helpers/panel.js';

const track = closesAfterEach();

/** A two-agent debate run to its end, or until `signal` stops it; returns the stored record. */
async function debate(judgeScores: number[], override?: (req: SimRequest) => SimReply | undefined, signal?: AbortSignal) {
  const preset = testPreset(['a', 'b'], { protocol: { maxRounds: 2, convergenceThreshold: 0.85, callTimeoutSeconds: 10 } });
  const sim = track(await startSimulator({ models: simModels(preset), respond: scriptedResponder(judgeScores, override).respond }));
  const store = track(openStore(':memory:'));
  const error = await runDebate({ question: 'Should we do A?', preset, host: sim.url, recorder: recorder(store), ...(signal ? { signal } : {}) }).catch((e: unknown) => e);
  const [row] = store.listDebates();
  return { error, stored: store.getDebate(row!.id) };
}

describe('the status line of the Markdown document', () => {
  it('says an interrupted debate is interrupted once, not as its status and again as its reason', async () => {
    const controller = new AbortController();
    const { error, stored } = await debate([0.1], (req) => {
      if (stageOf(req) === 'critique') {
        setTimeout(() => controller.abort(), 50);
        return { content: reply.critique(agentOf(req)!), delayMs: 2000 };
      }
      return undefined;
    }, controller.signal);
    expect(error).toBeInstanceOf(InterruptedError);
    expect(stored.status).toBe('interrupted');
    expect(stored.exitReason).toBe('interrupted');
    const md = renderMarkdown(stored);
    expect(md).toContain('\n- Status: interrupted\n');
    expect(md).not.toContain('interrupted, interrupted');
    // The card's footer, as `show` and `replay` print it, says it once too.
    const card = renderCard(stored);
    expect(card).toContain(`debate ${stored.id} · interrupted · `);
    expect(card).not.toContain('interrupted (interrupted)');
  });

  it('still gives the reason of a debate that ended otherwise', async () => {
    const { stored } = await debate([0.95]);
    expect(stored.status).toBe('completed');
    expect(renderMarkdown(stored)).toContain(`\n- Status: completed, ${exitText(stored.exitReason!)}\n`);
  });

  it('writes beside a status only words that add to it', () => {
    expect(exitTextBeside('interrupted', 'interrupted')).toBeNull();
    expect(exitTextBeside('completed', null)).toBeNull();
    expect(exitTextBeside('completed', 'converged')).toBe('the panel converged');
    expect(exitTextBeside('unsynthesized', 'max_rounds')).toBe('reached the round limit');
  });
});
