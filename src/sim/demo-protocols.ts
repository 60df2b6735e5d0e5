import type { SimRequest } from './server.js';

/**
 * Scripted replies for the tournament's verdicts and the decomposition's split and parts,
 * so `conclave demo --preset tournament|decompose` runs against the simulator. Replies
 * depend only on the request: the schema's enum of the two players, the sub-question number.
 */

function lastText(req: SimRequest): string {
  return req.messages.at(-1)?.content ?? '';
}

/** Why each player wins a match, by its rank below: each stance wins on its own strengths. */
const WIN_REASONS = [
  [
    'keeps a later move cheap with a repository layer and portable SQL, so a trigger can be acted on without a rewrite',
    'counts Postgres-only features as a trigger, not only write load',
  ],
  [
    'keeps the change small: a thin typed data-access layer now, and nothing more until a measured trigger fires',
    'counts the standing cost of running a Postgres server, which the other answer does not weigh',
  ],
  [
    'has the migration rehearsed before any trigger fires, so the move is never made in a rush',
    "answers the other side's point about migration cost directly",
  ],
];

/** The judge prefers the panelist whose scripted stance is most conditional (abstraction, then stay, then migrate), and says why that one won. */
export function demoVerdict(req: SimRequest, rankOf: (agentId: string) => number): string {
  const winnerSchema = (req.format as { properties?: { winner?: { enum?: string[] } } } | null)?.properties?.winner;
  const players = winnerSchema?.enum ?? [];
  const [a, b] = players;
  const winner = a !== undefined && b !== undefined ? (rankOf(b) < rankOf(a) ? b : a) : (a ?? '');
  const rank = rankOf(winner);
  return JSON.stringify({ winner, reasons: WIN_REASONS[(rank < 0 ? 0 : rank) % WIN_REASONS.length] });
}

const SUB_QUESTIONS = [
  { question: 'What is the current and expected write load, and where does SQLite in WAL mode stop coping?', dependsOn: [] },
  { question: 'What does a migration to Postgres cost now, and how does that cost grow with data and features?', dependsOn: [] },
  { question: 'Given the load limits and the migration cost, when should the tool move, and what should be done now to keep the move cheap?', dependsOn: [1, 2] },
];

export function demoSplit(): string {
  return JSON.stringify({ subQuestions: SUB_QUESTIONS });
}

const SUB_ANSWERS: Record<number, { position: string; reasoning: string; confidence: number }> = {
  1: {
    position: 'Today the tool sees a handful of writers; SQLite in WAL mode handles well over a hundred small writes per second on one disk, so the limit is far off.',
    reasoning: 'Write volume grows with users, not data size; at the current growth rate the team is more than a year from 50 sustained writers per second.',
    confidence: 80,
  },
  2: {
    position: 'A migration now costs about two weeks; it grows with every feature that leans on SQLite-specific SQL and with the data to move.',
    reasoning: 'Most of the cost is in the data-access code, not in moving rows; a thin repository layer keeps it flat.',
    confidence: 74,
  },
  3: {
    position: 'Stay on SQLite now, add a repository layer with portable SQL, and move once writers pass about 50 per second or a second service needs the data.',
    reasoning: 'The load answer leaves ample headroom, and the cost answer shows the move stays cheap only if the data access is kept portable.',
    confidence: 82,
  },
};

/** The decomposer's reassembly: the three parts put together, nobody dissenting. */
export function demoReassembly(req: SimRequest): string | null {
  const text = lastText(req);
  if (!text.includes('You split this question')) return null;
  const answeredBy = [...text.matchAll(/Answered by (\S+?):/g)].map((m) => m[1]!);
  return JSON.stringify({
    recommendation: 'Stay on SQLite now and put a repository layer with portable SQL in front of it; move to Postgres once sustained writers pass about 50 per second or a second service needs the data.',
    triggersToRevisit: ['Sustained concurrent writers above about 50 per second', 'A second service needs the same data', 'The repository layer is bypassed by SQLite-specific SQL'],
    confidence: { level: 'medium', converged: new Set(answeredBy).size },
    restsOn: [...new Set(answeredBy)],
    minorityPositions: [],
    failedAgents: [],
  });
}

export function demoSubAnswer(req: SimRequest): string | null {
  const n = Number(/Yours is sub-question (\d+)/.exec(lastText(req))?.[1] ?? NaN);
  const answer = SUB_ANSWERS[n];
  return answer ? JSON.stringify(answer) : null;
}
