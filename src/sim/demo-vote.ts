import { REVIEW_CLOSE, REVIEW_OPEN } from '../protocol/vote-prompts.js';
import type { SimRequest } from './server.js';

/**
 * The demo panel's side of the cluster vote (presets/cluster-vote.yaml): six
 * panelists on the SQLite-or-Postgres question, three advocates of migrating
 * (agents 0–2) and three critics (agents 3–5). Who endorses which final position
 * is fixed below so that the demo shows every tier: Consensus with persuasion
 * both ways, Polar on each side, and one Reject.
 */

export interface ClusterArchetype {
  opening: { position: string; reasoning: string; confidence: number };
  updates: string[];
  confidence: number[];
  /** The position after a refinement round, when the preset iterates. */
  refined: string;
  /** For each agent index: does that agent endorse this archetype's final position? */
  endorsedBy: boolean[];
  /** The same for the refined position. */
  refinedEndorsedBy: boolean[];
  side: 'advocate' | 'critic';
}

const Y = true;
const N = false;

export const CLUSTER_ARCHETYPES: ClusterArchetype[] = [
  {
    side: 'advocate',
    opening: {
      position: 'Move to Postgres this quarter, while the database is still small enough to copy over in an afternoon.',
      reasoning: 'Each month of growth makes the move longer and riskier. Postgres also brings streaming replication, point-in-time recovery and real roles.',
      confidence: 70,
    },
    updates: [
      'Plan the move to Postgres now but time it by measured load: rehearse the migration once, then switch when sustained writers pass about 50 per second.',
      'Prepare the Postgres move now and switch on a measured trigger: rehearse the migration once this quarter, keep the scripts tested in CI, and cut over when sustained writers pass about 50 per second or a second service needs the data.',
    ],
    confidence: [72, 80],
    refined: 'Keep SQLite today behind a typed data-access layer, rehearse the Postgres migration once this quarter with its scripts tested in CI, and cut over when sustained writers pass about 50 per second or a second service needs the data.',
    endorsedBy: [N, Y, N, Y, Y, Y],
    refinedEndorsedBy: [N, Y, Y, Y, Y, Y],
  },
  {
    side: 'advocate',
    opening: {
      position: 'Migrate now: two prospects in the sales pipeline require a managed, replicated database before they sign.',
      reasoning: 'Enterprise security reviews ask how the data is replicated and backed up. A single SQLite file is a hard answer to give, and the deals are worth more than the hosting.',
      confidence: 68,
    },
    updates: [
      'Migrate within two quarters so that enterprise security reviews stop blocking deals; a load threshold is the wrong trigger for a sales requirement.',
      'Migrate within two quarters: enterprise customers ask for a managed, replicated database in their security reviews, and that demand will not wait for a load threshold.',
    ],
    confidence: [70, 74],
    refined: 'Keep SQLite behind a typed data-access layer with a rehearsed migration, and bring the cut-over forward as soon as a signed customer contract requires a managed, replicated database.',
    endorsedBy: [Y, N, Y, N, N, N],
    refinedEndorsedBy: [Y, N, Y, Y, Y, N],
  },
  {
    side: 'advocate',
    opening: {
      position: 'Migrate now so that analytics can query live data with standard tools instead of copying the SQLite file around.',
      reasoning: 'Analysts copy the database file nightly and query stale data. Postgres would let them use read replicas and the BI tools they already know.',
      confidence: 66,
    },
    updates: [
      'Migrate now and retire SQLite at once; running both during a transition doubles the work.',
      'Migrate everything to Postgres in one cut-over this month and delete the SQLite code path; a transition period with both stores is wasted effort.',
    ],
    confidence: [70, 76],
    refined: 'Stay on SQLite until the measured trigger, give analytics a nightly read-only copy in the meantime, and migrate in one rehearsed cut-over when the trigger is reached.',
    endorsedBy: [N, N, N, N, N, N],
    refinedEndorsedBy: [Y, Y, N, Y, N, Y],
  },
  {
    side: 'critic',
    opening: {
      position: 'Stay on SQLite. One file is easy to back up and restore, and a Postgres server is one more thing to be paged for at night.',
      reasoning: 'The current load is far below what SQLite in WAL mode handles. A database server adds patching, connection limits, failover and monitoring.',
      confidence: 75,
    },
    updates: [
      'Stay on SQLite for now and put a data-access layer in front of it so that a later move is contained.',
      'Stay on SQLite for now and put a typed data-access layer in front of it, so that moving to Postgres later is a contained change rather than a rewrite.',
    ],
    confidence: [78, 84],
    refined: 'Stay on SQLite for now behind a typed data-access layer, rehearse the Postgres migration once, and cut over on a measured trigger: about 50 sustained writers per second, or a second service that needs the data.',
    endorsedBy: [Y, Y, N, N, Y, Y],
    refinedEndorsedBy: [Y, Y, Y, N, Y, Y],
  },
  {
    side: 'critic',
    opening: {
      position: 'Stay on SQLite: a managed Postgres instance with a replica costs more per year than all of the tool\'s hosting today.',
      reasoning: 'The tool earns nothing extra from Postgres until a customer pays for it. The money is better spent on the features on the roadmap.',
      confidence: 72,
    },
    updates: [
      'Stay on SQLite and revisit the question at the next budget review.',
      'Stay on SQLite until the cost is justified: revisit at the next budget review, and migrate only when a customer contract pays for the managed database.',
    ],
    confidence: [74, 78],
    refined: 'Stay on SQLite behind a typed data-access layer, rehearse the migration once, and cut over on the measured trigger or when a customer contract pays for the managed database, whichever comes first.',
    endorsedBy: [N, N, N, Y, N, Y],
    refinedEndorsedBy: [Y, Y, N, Y, N, Y],
  },
  {
    side: 'critic',
    opening: {
      position: 'Stay on SQLite; nobody on the team has run Postgres in production, and learning it during an incident is the worst way to learn it.',
      reasoning: 'Operating skill matters more than the engine. The team knows SQLite\'s failure modes and has restored it from backup before.',
      confidence: 70,
    },
    updates: [
      'Stay on SQLite until someone on the team can operate Postgres.',
      'Stay on SQLite, and before any move train one engineer in Postgres operations and write and test the restore runbook.',
    ],
    confidence: [72, 76],
    refined: 'Stay on SQLite behind a typed data-access layer; before the measured trigger is reached, train one engineer in Postgres operations and test the restore runbook, then cut over.',
    endorsedBy: [Y, N, N, Y, N, N],
    refinedEndorsedBy: [Y, Y, N, Y, Y, N],
  },
];

const REASONS = {
  advocate: {
    yes: 'Its reasoning holds up from where I sit, and it does not block the growth the move is meant to serve.',
    no: 'It gives up on what the migration is for, or takes a risk I would not sign off on.',
  },
  critic: {
    yes: 'It keeps the operating risk and cost under control, so I can endorse it even where it is not my first choice.',
    no: 'It takes on operating cost or risk the team cannot carry yet.',
  },
};

function between(text: string, open: string, close: string): string | null {
  const start = text.indexOf(open);
  const end = text.indexOf(close, start + open.length);
  return start >= 0 && end > start ? text.slice(start + open.length, end).trim() : null;
}

function normalise(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Which archetype wrote `text`, and whether it is the refined version. */
function authorOf(text: string): { arch: ClusterArchetype; refined: boolean } | null {
  const wanted = normalise(text);
  for (const arch of CLUSTER_ARCHETYPES) {
    if (normalise(arch.refined) === wanted) return { arch, refined: true };
    if ([arch.opening.position, ...arch.updates].some((t) => normalise(t) === wanted)) return { arch, refined: false };
  }
  return null;
}

/** The first word of a position ("Stay", "Migrate"): the stance, for panels outside the cluster demo. */
function stance(text: string | null): string {
  return (text ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
}

/**
 * A vote reply. Clustered demo agents follow the table above; anyone else
 * endorses positions that take the same stance as its own final position.
 */
export function demoVote(req: SimRequest, voterIndex: number, clustered: boolean): string {
  const prompt = req.messages.at(-1)?.content ?? '';
  const artifact = between(prompt, REVIEW_OPEN, REVIEW_CLOSE) ?? '';
  const voter = clustered ? CLUSTER_ARCHETYPES[voterIndex % CLUSTER_ARCHETYPES.length] : undefined;
  const author = clustered ? authorOf(artifact) : null;
  let yes: boolean;
  if (voter && author) {
    const table = author.refined ? author.arch.refinedEndorsedBy : author.arch.endorsedBy;
    yes = table[voterIndex % table.length] ?? false;
  } else {
    const own = between(prompt, 'Your own final position, for reference:\n', '\n\n');
    yes = stance(own) !== '' && stance(own) === stance(artifact);
  }
  const side = voter?.side ?? 'critic';
  return JSON.stringify({ reason: REASONS[side][yes ? 'yes' : 'no'], vote: yes ? 'YES' : 'NO' });
}

/** A refinement reply: the archetype's refined position, or the agent's own position unchanged. */
export function demoRefine(req: SimRequest, agentIndex: number, clustered: boolean): string {
  const prompt = req.messages.at(-1)?.content ?? '';
  const own = between(prompt, 'Your position at this point:\n', '\n\n') ?? 'Stay on SQLite for now.';
  const arch = clustered ? CLUSTER_ARCHETYPES[agentIndex % CLUSTER_ARCHETYPES.length] : undefined;
  return JSON.stringify({ refinedPosition: arch?.refined ?? own, confidence: 82 });
}
