import { describe, expect, it } from 'vitest';
import { type CallFacts, QUALITY_RULES, rateResult, type ResultFacts } from '../../src/protocol/quality.js';

const clean: CallFacts = { repaired: false, cutAtLimit: false, truncatedPrompt: false, normalized: 0 };
const opening = (over: Partial<ResultFacts> = {}): ResultFacts => ({ position: 'Adopt the plan in two phases', reasoning: 'Phasing limits the risk.', confidence: 0.7, ...over });

describe('rateResult', () => {
  it('passes a clean answer with a full score and no reasons', () => {
    expect(rateResult(opening(), clean)).toEqual({ score: 100, action: 'PASS', reasons: [] });
  });

  it('rejects a position with no word in it, whatever else holds', () => {
    for (const position of ['', '   ', '—…!?', '\n\t']) {
      const r = rateResult(opening({ position }), clean);
      expect(r).toMatchObject({ score: 0, action: 'REJECT' });
      expect(r.reasons).toEqual(['the position has no words in it']);
    }
  });

  it('counts words in any script and digits as words', () => {
    expect(rateResult(opening({ position: 'Да, 42 раза' }), clean).action).toBe('PASS');
    expect(rateResult(opening({ position: '是的' }), clean).reasons).toEqual([`the position is one word (−${QUALITY_RULES.shortPosition})`]);
  });

  it('takes each rule’s points off and names it', () => {
    const r = rateResult(opening({ position: 'Yes', reasoning: ' ', confidence: 0.1 }), { repaired: true, cutAtLimit: true, truncatedPrompt: true, normalized: 2 });
    expect(r.reasons).toEqual([
      'the reply was cut off at num_predict (−35)',
      'the position is one word (−25)',
      'no reasoning given (−25)',
      'the first reply was not valid for the schema and needed a repair (−20)',
      "the agent's own confidence is 0.1 (−15)",
      'its prompt was shortened to fit num_ctx (−10)',
      'the engine had to adjust the reply (−5)',
    ]);
    expect(r).toMatchObject({ score: 0, action: 'REJECT' });
  });

  it('maps the score to an action at the documented thresholds', () => {
    // Exactly 75 passes, 70 warns (truncated prompt + a confidence under the floor: −25 = 75; plus normalised: 70).
    expect(rateResult(opening({ confidence: 0.1 }), { ...clean, truncatedPrompt: true })).toMatchObject({ score: 75, action: 'PASS' });
    expect(rateResult(opening({ confidence: 0.1 }), { ...clean, truncatedPrompt: true, normalized: 1 })).toMatchObject({ score: 70, action: 'WARN' });
    // 50 warns, 45 is retried.
    expect(rateResult(opening({ position: 'Yes', reasoning: '' }), clean)).toMatchObject({ score: 50, action: 'WARN' });
    expect(rateResult(opening({ position: 'Yes', reasoning: '' }), { ...clean, normalized: 1 })).toMatchObject({ score: 45, action: 'RETRY' });
    // 25 is still retried, 20 is rejected.
    expect(rateResult(opening({ position: 'Yes', reasoning: '', confidence: 0 }), { ...clean, truncatedPrompt: true })).toMatchObject({ score: 25, action: 'RETRY' });
    expect(rateResult(opening({ position: 'Yes', reasoning: '', confidence: 0 }), { ...clean, truncatedPrompt: true, normalized: 1 })).toMatchObject({ score: 20, action: 'REJECT' });
  });

  it('treats the confidence floor as exclusive', () => {
    expect(rateResult(opening({ confidence: QUALITY_RULES.confidenceFloor }), clean).score).toBe(100);
    expect(rateResult(opening({ confidence: 0.19 }), clean).score).toBe(85);
    expect(rateResult(opening({ confidence: 1 }), clean).score).toBe(100);
    expect(rateResult(opening({ confidence: Number.NaN }), clean).score).toBe(100);
  });

  it('asks a critique shown peers to name at least one of them', () => {
    const critique = { position: 'Keep the plan as it is', confidence: 0.6 };
    expect(rateResult({ ...critique, peers: 2, engaged: 0 }, clean).reasons).toEqual(['it names no peer it agrees or disagrees with (−15)']);
    expect(rateResult({ ...critique, peers: 2, engaged: 1 }, clean).score).toBe(100);
    expect(rateResult({ ...critique, peers: 0, engaged: 0 }, clean).score).toBe(100);
  });

  it('does not ask for reasoning where the kind of result has none', () => {
    expect(rateResult({ position: 'Keep the plan as it is' }, clean).score).toBe(100);
  });

  it('keeps a retried answer that would be retried again as WARN, and a rejected one as REJECT', () => {
    const weak = opening({ position: 'Yes', reasoning: '' });
    const again = rateResult(weak, { ...clean, normalized: 1 }, true);
    expect(again).toMatchObject({ score: 45, action: 'WARN' });
    expect(again.reasons.at(-1)).toBe('kept after its one retry');
    expect(rateResult(opening({ position: ' ' }), clean, true).action).toBe('REJECT');
  });

  it('rates a huge position like a short one, and a huge run of punctuation as no words', () => {
    const huge = 'word '.repeat(2_000_000);
    expect(rateResult(opening({ position: huge, reasoning: huge }), clean).score).toBe(100);
    expect(rateResult(opening({ position: '.'.repeat(1_000_000) }), clean).action).toBe('REJECT');
  });

  it('gives the same rating for the same facts', () => {
    const facts = opening({ position: 'Maybe', confidence: 0.05 });
    expect(rateResult(facts, clean)).toEqual(rateResult(facts, clean));
  });
});

describe('the seed\'s quality indicators', () => {
  it('records whether a result stated trade-offs and how many constraints, taking no points off', () => {
    expect(rateResult(opening({ tradeOffs: 2, constraints: 3 }), clean)).toEqual({ score: 100, action: 'PASS', reasons: [], indicators: { hasTradeOffs: true, constraintCount: 3 } });
    expect(rateResult(opening({ tradeOffs: 0, constraints: 0 }), clean)).toEqual({ score: 100, action: 'PASS', reasons: [], indicators: { hasTradeOffs: false, constraintCount: 0 } });
    // Kept on a rejected answer too, and absent for a kind of result that states none.
    expect(rateResult(opening({ position: '…', tradeOffs: 1, constraints: 0 }), clean).indicators).toEqual({ hasTradeOffs: true, constraintCount: 0 });
    expect(rateResult(opening(), clean)).not.toHaveProperty('indicators');
  });
});
