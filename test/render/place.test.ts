import { describe, expect, it } from 'vitest';
import { callPlaceText, placeText } from '../../src/render/place.js';

describe('where a call sits, in words', () => {
  it('says "round N" only for a round of answers or critiques', () => {
    expect(placeText('opening', 0)).toBe('round 0');
    expect(placeText('critique', 2)).toBe('round 2');
    expect(callPlaceText('critique', 2)).toBe('critique round 2');
  });

  it('names the stages after the rounds, the phases, sub-questions and bracket rounds by their own terms', () => {
    expect(placeText('targeted', 2)).toBe('the targeted exchange');
    expect(placeText('clash', 0)).toBe('the tension map, on the round-0 answers');
    expect(placeText('clash', 2)).toBe('the tension map');
    expect(placeText('review', 2)).toBe('review phase');
    expect(placeText('subanswer', 3)).toBe('sub-question 3');
    expect(placeText('reassembly', 4)).toBe('the reassembly');
    expect(placeText('verdict', 1)).toBe('bracket round 1');
    expect(callPlaceText('targeted', 2)).toBe('targeted (the targeted exchange)');
  });
});
