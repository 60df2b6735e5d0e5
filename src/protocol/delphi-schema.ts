import { z } from 'zod';
import type { DelphiMode } from './delphi.js';
import { percent } from './grammar.js';

/**
 * The reply's schema. Every property is required, so the grammar writes them in this order. In
 * round 0 `estimate` is a number or null: a panelist whose question asks for no number writes null.
 * In a numeric question's later rounds it is a number. The grammar cannot bound a number: any finite
 * value is read as written (a wild one is an outlier the median resists, never clamped); one that is
 * not finite (1e999) is repaired by the call road.
 */
export const delphiSchemaFor = (mode: DelphiMode) => SCHEMAS[mode];

const answer = z.string().min(1).describe('Your answer, stated plainly and complete on its own.');
const reason = z.string().min(1).describe('Why you hold this answer; after the first round, why you kept or changed it.');
const confidence = percent().describe('How sure you are, from 0 to 100.');
const SCHEMAS = {
  open: z.strictObject({ answer, estimate: z.number().nullable().describe('The number your answer comes to, or null when the question asks for no number.'), reason, confidence }),
  numeric: z.strictObject({ answer, estimate: z.number().describe('The number your answer comes to.'), reason, confidence }),
  stances: z.strictObject({ answer, reason, confidence }),
} satisfies Record<DelphiMode, z.ZodType>;
