import type { TensionUpdate } from '../protocol/tensions.js';

/** What the tension-map stage reports as it goes (see src/engine/stages/tensions.ts). */
export type TensionEvent = { type: 'tensions.update'; update: TensionUpdate; at: number };
