import type { DebateSummary, ListOptions, RecordReader } from '../store/reader.js';
import { flaggedTensionMaps } from '../store/tensions-read.js';

export type DebateListEntry = DebateSummary & { flaggedForReview: boolean };

/** What `list --json` prints and `GET /api/debates` serves: debates newest first, with the tension-map review flag. */
export function debateListDocument(store: RecordReader, opts: ListOptions = {}): DebateListEntry[] {
  const rows = store.listDebates(opts);
  const review = new Set(flaggedTensionMaps(store, rows.map((r) => r.id)).ids);
  return rows.map((r) => ({ ...r, flaggedForReview: review.has(r.id) }));
}
