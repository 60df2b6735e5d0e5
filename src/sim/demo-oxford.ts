import type { SimRequest } from './server.js';

/**
 * Scripted speeches and verdict for `conclave demo --preset oxford`: the motion is the demo's
 * question, "migrate to Postgres now?". The for side argues for the move, the against side for
 * staying with a trigger; the judge finds against, by a clear margin, and the synthesis keeps the
 * for side's best point as the minority. Every reply depends on the request alone: the side the
 * prompt names, the phase, the speaker's place in its panel, and the ids the schema allows.
 */

function lastText(req: SimRequest): string {
  return req.messages.at(-1)?.content ?? '';
}

/** The side a speech prompt names, or null when it is no Oxford speech. */
export function oxfordSide(req: SimRequest): 'for' | 'against' | null {
  const m = /^You speak (FOR|AGAINST) the motion\./m.exec(lastText(req));
  return m ? (m[1] === 'FOR' ? 'for' : 'against') : null;
}

const CASES = {
  for: [
    {
      position: 'Migrate to Postgres now, while the data is small: the move costs a day today and a risky week under load later.',
      reasoning: 'Migration cost grows with data, features and the number of places that assume SQLite. Postgres also brings roles, replication and concurrent writers without a single-writer lock.',
    },
    {
      position: 'Migrate now: the cost of staying is hidden in the single-writer lock, which will show up first as production timeouts nobody can reproduce.',
      reasoning: 'SQLite serialises writers; the first sign of trouble is intermittent lock timeouts. Moving before they appear is cheaper than diagnosing them in production.',
    },
  ],
  against: [
    {
      position: 'Do not migrate now: SQLite in WAL mode carries this load with room to spare, and Postgres adds a server to run, back up and patch. Set a measured trigger instead.',
      reasoning: 'A handful of writers is far below what SQLite handles. A typed data-access layer keeps a later move cheap, and a trigger (about 50 sustained writers per second) says when.',
    },
    {
      position: 'Do not migrate now: the team pays for a database server every day to insure against a load it does not have.',
      reasoning: 'Operating Postgres is a standing cost; the migration risk is better handled by rehearsing the move once and keeping the SQL portable.',
    },
  ],
} as const;

/** An opening speech for the side and the speaker's place among its panel's agents. */
export function demoOxfordOpening(req: SimRequest, place: number): string | null {
  const side = oxfordSide(req);
  if (!side) return null;
  const c = CASES[side][place % 2]!;
  return JSON.stringify({ ...c, confidence: side === 'for' ? 62 : 74 });
}

function allowed(req: SimRequest): string[] {
  const props = (req.format as { properties?: { disagreements?: { items?: { properties?: { with?: { enum?: string[] } } } } } } | null)?.properties;
  return props?.disagreements?.items?.properties?.with?.enum ?? [];
}

/** A rebuttal or a closing: concedes one point to the first of the other side, rebuts each. */
export function demoOxfordAnswer(req: SimRequest, place: number): string | null {
  const side = oxfordSide(req);
  if (!side) return null;
  const closing = lastText(req).includes('This is your closing speech');
  const others = allowed(req);
  const forSide = side === 'for';
  return JSON.stringify({
    agreements: others.slice(0, 1).map((id) => ({ with: id, on: forSide ? 'today\'s write load is well within what SQLite handles' : 'a migration gets more expensive as the data grows' })),
    disagreements: others.map((id) => ({
      with: id,
      on: forSide ? 'waiting for a trigger' : 'migrating now',
      reason: forSide ? 'a trigger is crossed quietly, and the move then happens under load, the costly case' : 'a rehearsed move behind a data-access layer stays cheap; paying for a server now buys nothing measurable',
    })),
    updatedPosition: closing
      ? forSide
        ? 'In closing: the migration only gets dearer; the other side concedes that and answers it with a trigger that nobody watches. Move now.'
        : 'In closing: the load is far below SQLite\'s limits, the migration cost is real but managed by a data-access layer and a rehearsed move, and the trigger makes the decision measurable. Stay for now.'
      : CASES[side][place % 2]!.position,
    confidence: forSide ? 58 : 78,
  });
}

/** The judge finds against the motion, the for side's cost-of-waiting argument its best point. */
export function demoOxfordVerdict(req: SimRequest): string {
  const props = (req.format as { properties?: Record<string, { properties?: { speaker?: { enum?: string[] } } }> } | null)?.properties ?? {};
  const first = (key: string) => props[key]?.properties?.speaker?.enum?.[0] ?? '';
  return JSON.stringify({
    strongestFor: { speaker: first('strongestFor'), argument: 'A migration only gets more expensive as the data grows; doing it while small avoids migrating under load.' },
    strongestAgainst: { speaker: first('strongestAgainst'), argument: 'The load is far below SQLite\'s limits; a data-access layer and a measured trigger answer the migration-cost concern without running a server now.' },
    winner: 'against',
    reasons: ['the against side answered the cost-of-waiting argument with a concrete trigger and a rehearsed move', 'the for side gave no evidence that the load is near SQLite\'s limits'],
    margin: 68,
  });
}

/** The synthesis of an Oxford debate: stay, with the for side's best point kept as the minority. */
export function demoOxfordSynthesis(req: SimRequest, ids: string[]): string | null {
  const text = lastText(req);
  if (!text.includes('held an Oxford debate')) return null;
  const losing = /^The losing side's best point \(([^,]+), (for|against)\): (.*)$/m.exec(text);
  const against = /^For: .*\. Against: ([^.]*)\./m.exec(text)?.[1]?.split(',').map((s) => s.trim()) ?? [];
  return JSON.stringify({
    recommendation: 'Do not migrate now. Stay on SQLite behind a typed data-access layer, rehearse the move once, and migrate when a measured trigger is crossed.',
    triggersToRevisit: ['Sustained concurrent writers above about 50 per second', 'Lock timeouts in production', 'A second service needs the same data'],
    confidence: { level: 'medium', converged: against.length },
    restsOn: against.filter((id) => ids.includes(id)),
    minorityPositions: losing && ids.includes(losing[1]!)
      ? [{ agent: losing[1]!, round: 0, argument: losing[3]!, whyItMatters: 'If the trigger is crossed quietly, the team migrates under load, the costly case this side warned about.' }]
      : [],
    failedAgents: [],
  });
}
