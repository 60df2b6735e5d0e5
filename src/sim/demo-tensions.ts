import { reviewPlace } from './demo-pipeline.js';
import type { SimRequest } from './server.js';

/**
 * The demo panels' side of the tension map, in two scripts. The debate's, on the
 * SQLite-or-Postgres question (presets/tension-map.yaml and the other debate presets
 * with a map): each of the three archetypes states three claims, and the clashes set
 * them against each other so that the demo shows every clash type, fires the targeted
 * round (two load-bearing clashes at 6 or more) and ends with the worst clash narrowed
 * but not resolved. The code review's (presets/code-review.yaml, whose map reads the two
 * reviews): the reviewers agree the migration blocks the change and clash over the retry
 * loop, once, so no targeted exchange fires. Claims are matched by their text, so a
 * clash or map call answers from the script whose claims it lists.
 */

interface ScriptedClash {
  a: [number, number];
  b: [number, number];
  type: 'factual' | 'interpretive' | 'emphasis';
  severity: number;
  loadBearing: boolean;
  resolvable: boolean;
  recommendation: string;
}

interface MapScript {
  headline: string;
  /** Each zone's supporters by place: the order of the panelists the map prompt lists. */
  consensus: { claim: string; places: number[]; confidence: number; loadBearing: boolean }[];
  majorFindings: string[];
  /** The open questions, as the targeted exchange left them (narrowed or not). */
  openQuestions: (narrowed: boolean) => string[];
  /** The map model's own reading of how well-founded each panelist's case is, by place (not the panelists' confidence). */
  confidence: number[];
}

interface TensionScript {
  /** Each part's claims: a debate archetype's, or a reviewer's. */
  claims: string[][];
  clashes: ScriptedClash[];
  map: MapScript;
}

const CLAIMS: string[][] = [
  [
    "SQLite in WAL mode handles the tool's current write load with plenty of room to spare.",
    'Running Postgres adds a server that the team must patch, back up and watch.',
    'A typed data-access layer makes a later move to Postgres cheap.',
  ],
  [
    'Write load will outgrow a single SQLite writer within a year.',
    'A migration gets more expensive and riskier the more data there is to move.',
    'The move should be rehearsed before a trigger forces it.',
  ],
  [
    'What a later migration costs depends on how tightly the code is tied to SQLite, not on how much data there is.',
    'A repository layer with portable SQL keeps both options open.',
    'Nobody has measured the real write load yet, so any migration trigger is a guess.',
  ],
];

const CLASHES: ScriptedClash[] = [
  {
    a: [0, 0],
    b: [1, 0],
    type: 'factual',
    severity: 9,
    loadBearing: true,
    resolvable: true,
    recommendation: 'Measure peak concurrent writes for two weeks before deciding: the figure settles this clash, and the decision turns on it.',
  },
  {
    a: [1, 1],
    b: [2, 0],
    type: 'interpretive',
    severity: 6,
    loadBearing: true,
    resolvable: false,
    recommendation: 'Weigh it by how coupled the code is today: if queries are already behind one module, the data-size argument loses most of its force.',
  },
  {
    a: [0, 0],
    b: [2, 2],
    type: 'interpretive',
    severity: 5,
    loadBearing: true,
    resolvable: true,
    recommendation: 'Treat the headroom claim as likely but unproven until the load is measured.',
  },
  {
    a: [0, 2],
    b: [2, 1],
    type: 'emphasis',
    severity: 2,
    loadBearing: false,
    resolvable: false,
    recommendation: 'Both want the same layer; the difference is only which benefit they lead with. It need not affect the decision.',
  },
];

const TARGETED = [
  {
    response:
      'The growth claim assumes the current trend continues, but the write rate has been flat for months and WAL mode sustains several hundred small writes per second on ordinary disks. Growth would have to be about tenfold to reach one writer\'s limit within a year.',
    stance: 'maintain',
    revisedClaim: "SQLite in WAL mode handles the tool's write load now and for any growth short of roughly tenfold.",
    confidence: 74,
  },
  {
    response:
      'Fair point that the write rate is flat today. My claim rests on the planned second service, which would roughly triple writes; that still leaves SQLite in range, so I narrow it to the case where that service ships with its own write path.',
    stance: 'narrow',
    revisedClaim: 'Write load outgrows one SQLite writer only if the planned second service ships with its own write path.',
    confidence: 62,
  },
  {
    response: 'The disagreement turns on coupling rather than on data size; I keep my reading but accept that it should be checked against the code.',
    stance: 'maintain',
    revisedClaim: 'Migration cost is driven mainly by coupling, which should be checked in the code.',
    confidence: 70,
  },
];

const DECISION: TensionScript = {
  claims: CLAIMS,
  clashes: CLASHES,
  map: {
    headline: 'The panel agrees to stay on SQLite behind a data-access layer, but splits on whether write load will outgrow it within a year.',
    consensus: [
      { claim: 'Put a typed data-access layer with portable SQL in front of SQLite now.', places: [0, 1, 2], confidence: 85, loadBearing: true },
      { claim: 'Rehearse the migration once so that a later move is not rushed.', places: [1, 2], confidence: 70, loadBearing: false },
    ],
    majorFindings: [
      'No one argues for migrating this week; the split is about timing and triggers.',
      'The decisive unknown is the real write load, which nobody has measured.',
      'A data-access layer is the first step under every position on the panel.',
    ],
    openQuestions: (narrowed) =>
      narrowed ? ['Will the planned second service bring its own write path, and when?', 'What is the measured peak of concurrent writes?'] : ['What is the measured peak of concurrent writes?'],
    // The architect's growth claim was the one narrowed in the targeted exchange.
    confidence: [72, 60, 68],
  },
};

/** The code review's map: claims the two reviews stand on (correctness, then operations), as src/sim/demo-pipeline.ts scripts them. */
const REVIEW: TensionScript = {
  claims: [
    [
      'The migration adds owner_id as NOT NULL with no default, so it fails on a table that already has rows.',
      'Apart from the migration the change is sound, the retry loop included.',
      'The retry path has no test for a billing API timeout.',
    ],
    [
      'owner_id is NOT NULL without a default or a backfill, so existing rows break the migration.',
      'The retry loop can hammer the billing API during an outage, because its backoff is a default the change does not show.',
    ],
  ],
  clashes: [
    {
      a: [0, 1],
      b: [1, 1],
      type: 'factual',
      severity: 8,
      loadBearing: true,
      resolvable: true,
      recommendation:
        "Read the retry helper's default backoff before merging: if it is exponential and capped, the loop is safe; if it is short or fixed, five attempts multiply the load on a billing API that is already failing.",
    },
    {
      a: [0, 2],
      b: [1, 1],
      type: 'emphasis',
      severity: 3,
      loadBearing: false,
      resolvable: false,
      recommendation: 'Both point at the retry path, one asking for a test and the other for a look at the backoff; a timeout test that checks the backoff answers both.',
    },
  ],
  map: {
    headline: 'Both reviewers block the change on the owner_id migration; they split on whether the retry loop is safe during a billing outage.',
    consensus: [{ claim: 'The owner_id migration needs a default or a backfill before the change ships.', places: [0, 1], confidence: 90, loadBearing: true }],
    majorFindings: [
      'Adding owner_id as NOT NULL with no default breaks the migration on any table with rows; both reviewers found it on their own.',
      "Whether the retry loop is safe turns on the retry helper's default backoff, which the change does not show.",
      'The retry path has no timeout test, so neither reading of the loop is checked.',
    ],
    openQuestions: () => ["What is the retry helper's default backoff, and does it cap the attempts?"],
    // The correctness review cites the lines it relies on; the operations concern rests on a default nobody has read.
    confidence: [80, 70],
  },
};

const SCRIPTS = [DECISION, REVIEW];

/** The reviewers' answers in a targeted exchange, by the claim each is asked about (not reached in the demo: one clash qualifies). */
const REVIEW_TARGETED: Record<string, { response: string; stance: 'maintain' | 'narrow' | 'concede'; revisedClaim: string; confidence: number }> = {
  [REVIEW.claims[0]![1]!]: {
    response: 'The change does not show the default backoff, so I cannot claim the loop is safe outright; it is safe if the helper backs off exponentially and caps the attempts.',
    stance: 'narrow',
    revisedClaim: "The retry loop is safe if the retry helper's default backoff is exponential and capped.",
    confidence: 65,
  },
  [REVIEW.claims[1]![1]!]: {
    response: 'Five attempts with an unknown backoff is exactly the case that turns a billing outage into a retry storm; until the default is read, the risk stands.',
    stance: 'maintain',
    revisedClaim: REVIEW.claims[1]![1]!,
    confidence: 70,
  },
};

function lastUser(req: SimRequest): string {
  return req.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
}

/** The agents the synthesizer's transcript marks as the last round's devil's advocate: their last turn is no view to rest on. */
export function lastRoundAdvocates(req: SimRequest): Set<string> {
  const last = lastUser(req).split(/^## Round /m).at(-1) ?? '';
  return new Set([...last.matchAll(/^\[([^\]]+)\][^\n]* devil's advocate this round/gm)].map((m) => m[1]!));
}

function archetypeOf(agentId: string, agentIds: readonly string[]): number {
  const i = agentIds.indexOf(agentId);
  return (i < 0 ? 0 : i) % CLAIMS.length;
}

/** Claims of the agent named in the request: a reviewer's when its answer is one of the scripted reviews, else its archetype's. */
export function demoClaims(req: SimRequest, agentIds: readonly string[]): string {
  const text = lastUser(req);
  const agent = /^Panelist: (\S+)$/m.exec(text)?.[1] ?? '';
  const review = reviewPlace(text);
  const own = review === null ? CLAIMS[archetypeOf(agent, agentIds)]! : REVIEW.claims[review % REVIEW.claims.length]!;
  // No more claims than the schema sent allows (the preset's maxClaimsPerAgent).
  const max = (req.format as { properties?: { claims?: { maxItems?: number } } } | null)?.properties?.claims?.maxItems ?? Infinity;
  return JSON.stringify({ claims: own.slice(0, Math.max(1, max)) });
}

/** Clashes among the claims and pairs listed in the request, from the script whose claims they are. */
export function demoClashes(req: SimRequest): string {
  const text = lastUser(req);
  const listed = [...text.matchAll(/^\[(C\d+)\] (\S+): (.*)$/gm)].map((m) => ({ id: m[1]!, agent: m[2]!, text: m[3]! }));
  const pairLine = /only these: (.*)\.$/m.exec(text)?.[1] ?? '';
  const pairs = new Set(pairLine.split('; ').map((p) => p.split(' with ').sort().join('|')));
  const clashes = [];
  for (const script of SCRIPTS) {
    const find = ([part, claim]: [number, number]) => listed.filter((c) => c.text === script.claims[part]?.[claim]);
    for (const c of script.clashes) {
      for (const a of find(c.a)) {
        for (const b of find(c.b)) {
          if (a.agent === b.agent || !pairs.has([a.agent, b.agent].sort().join('|'))) continue;
          clashes.push({
            claimA: a.id,
            claimB: b.id,
            type: c.type,
            severity: c.severity,
            loadBearing: c.loadBearing,
            resolvable: c.resolvable,
            recommendation: c.recommendation,
          });
        }
      }
    }
  }
  return JSON.stringify({ clashes });
}

/** An agent's answer in the targeted round: a reviewer's by the claim it is asked about, else by its place on the panel. */
export function demoTargeted(req: SimRequest, index: number): string {
  const own = /^Your claim: "(.*)"$/m.exec(lastUser(req))?.[1] ?? '';
  return JSON.stringify(REVIEW_TARGETED[own] ?? TARGETED[index % TARGETED.length]);
}

/** The map draft of the script whose claims the prompt lists: consensus, findings, open questions and a confidence per panelist. */
export function demoMap(req: SimRequest): string {
  const text = lastUser(req);
  const ids = (/^Panelists: (.*)$/m.exec(text)?.[1] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const narrowed = /Outcome: (narrowed|not resolved)/.test(text);
  const { map } = SCRIPTS.find((s) => s.claims.flat().some((c) => text.includes(c))) ?? DECISION;
  const pick = (places: number[]): string[] => [...new Set(places.map((n) => ids[n % Math.max(1, ids.length)]!).filter(Boolean))];
  return JSON.stringify({
    headline: map.headline,
    consensus: map.consensus
      .map((z) => ({ claim: z.claim, supportingAgents: pick(z.places), confidence: z.confidence, loadBearing: z.loadBearing }))
      .filter((z) => z.supportingAgents.length >= 2),
    majorFindings: map.majorFindings,
    openQuestions: map.openQuestions(narrowed),
    confidence: ids.map((agent, i) => ({ agent, confidence: map.confidence[i % map.confidence.length]! })),
  });
}

/**
 * The synthesizer's answer when the prompt carries a tension map: the worst
 * unresolved clash becomes a minority position, as the map asks. Null otherwise.
 */
export function demoTensionSynthesis(req: SimRequest, ids: readonly string[]): string | null {
  const text = lastUser(req);
  if (!text.includes('Tension map (')) return null;
  const top = /^- (T\d+) \((factual|interpretive)[^)]*\): (\S+) \[C\d+\] "([^"]*)" against (\S+) \[C\d+\] "([^"]*)"/m.exec(text);
  const advocates = lastRoundAdvocates(req);
  return JSON.stringify({
    recommendation: 'Stay on SQLite for now behind a typed data-access layer, and measure the write load before setting a migration date.',
    triggersToRevisit: ['Measured sustained writers above about 50 per second', 'The planned second service ships with its own write path'],
    confidence: { level: 'medium', converged: Math.max(0, ids.length - 1) },
    // Not the agent the minority position is credited to, nor an advocate whose last turn argued by assignment.
    restsOn: ids.filter((id) => id !== top?.[5] && !advocates.has(id)),
    minorityPositions: top
      ? [
          {
            agent: top[5]!,
            round: 0,
            argument: `${top[6]!} (${top[1]!}, a ${top[2]!} clash with ${top[3]!}, who holds: ${top[4]!})`,
            whyItMatters: 'If it is right, staying on SQLite runs into its single-writer limit within the planning horizon.',
          },
        ]
      : [],
    failedAgents: [],
  });
}

/** Concessions the panel makes in the critique rounds: an agent holding `own` gives way to `other` in `round`. */
const CONCESSIONS: { own: [number, number]; other: [number, number]; round: number }[] = [
  // The emphasis clash goes first: both want the same layer.
  { own: [0, 2], other: [2, 1], round: 1 },
  // The pragmatist grants that the headroom is not measured yet.
  { own: [0, 0], other: [2, 2], round: 2 },
];

/**
 * An agent's stance on each open clash its critique prompt lists, from the concessions above;
 * every other clash is maintained, and every clash when `concedes` is false (a devil's advocate
 * argues its brief, not its own view). Empty when the prompt lists none.
 */
export function demoClashUpdates(req: SimRequest, round: number, concedes = true): { tension: string; stance: 'maintain' | 'narrow' | 'concede' }[] {
  const listed = [...lastUser(req).matchAll(/^- (T\d+) \([^)]*\): you hold "(.*)"; \S+ holds "(.*)"$/gm)];
  const claim = ([a, c]: [number, number]): string | undefined => CLAIMS[a]?.[c];
  return listed.map((m) => {
    const concede = concedes && CONCESSIONS.some((x) => x.round === round && claim(x.own) === m[2] && claim(x.other) === m[3]);
    return { tension: m[1]!, stance: concede ? 'concede' : 'maintain' };
  });
}
