import { describe, expect, it } from 'vitest';
import { partialField } from '../../src/protocol/partial-json.js';

describe('partialField', () => {
  const whole = JSON.stringify({ position: 'Stay on "SQLite"\nfor now \u00e9', confidence: 80, notes: { position: 'nested' } });

  it('reads the text written so far at every cut of the reply, and the whole text once closed', () => {
    const start = whole.indexOf(':') + 2;
    for (let cut = 0; cut <= whole.length; cut++) {
      const hit = partialField(whole.slice(0, cut));
      if (cut < start) {
        expect(hit).toBeNull();
        continue;
      }
      expect(hit?.field).toBe('position');
      expect('Stay on "SQLite"\nfor now \u00e9'.startsWith(hit!.text)).toBe(true);
    }
    expect(partialField(whole)).toEqual({ field: 'position', text: 'Stay on "SQLite"\nfor now \u00e9', complete: true });
  });

  it('leaves out a half-written escape rather than showing a backslash', () => {
    expect(partialField('{"position": "a\\')?.text).toBe('a');
    expect(partialField('{"position": "a\\u00')?.text).toBe('a');
    expect(partialField('{"position": "a\\u00e9b')?.text).toBe('a\u00e9b');
  });

  it('reads top-level keys only, so a nested field of the same name does not count', () => {
    expect(partialField('{"score": {"recommendation": "x"}, "rationale": "Close')).toEqual({ field: 'rationale', text: 'Close', complete: false });
    expect(partialField('{"notes": ["position", "x"], "updatedPosition": "Now')).toEqual({ field: 'updatedPosition', text: 'Now', complete: false });
  });

  it('ignores a field whose value is not text, and a key named like a field inside a value', () => {
    expect(partialField('{"recommendation": 80, "summary": "position"}')).toBeNull();
    expect(partialField('{"critique": "the position is", "updatedPosition": "Keep')).toMatchObject({ field: 'updatedPosition', text: 'Keep' });
  });
});
