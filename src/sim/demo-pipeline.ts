import type { SimRequest } from './server.js';

/**
 * Scripted replies for the review pipeline (`conclave sim` with the code-review preset): a
 * lead's plan, an analyst's perspective, two reviewers who find the same blocking problem
 * (one sure, at 80) and one speculative blocking concern at 65 (which the engine downgrades),
 * and a filter that merges them. Each reply depends only on the request: the role is read
 * from the prompt, the reviewer from its place among the preset's reviewers.
 */

type Obs = { id: string; text: string; confidence: number; blocking: boolean; evidence: string };

const PLAN: { summary: string; observations: Obs[] } = {
  summary: 'Check that the schema change is safe on a live table, that the retry logic cannot amplify an outage, and that the change is covered by tests.',
  observations: [
    { id: 'P1', text: 'Check that every new column can be added to a table that already has rows.', confidence: 90, blocking: true, evidence: 'The change adds a column to the projects table.' },
    { id: 'P2', text: 'Check that retries back off and stop.', confidence: 75, blocking: false, evidence: 'The change wraps the billing API call in a retry loop.' },
    { id: 'P3', text: 'Check that the new code paths have tests.', confidence: 70, blocking: false, evidence: 'Two new functions are added.' },
  ],
};

const ANALYST: { summary: string; observations: Obs[] } = {
  summary: 'The change touches billing, so an error here costs money; a staged rollout would limit the damage.',
  observations: [
    { id: 'A1', text: 'Ship the billing part behind a flag so it can be turned off without a deploy.', confidence: 60, blocking: false, evidence: 'Billing errors reach customers directly.' },
  ],
};

const REVIEWS: { summary: string; observations: Obs[] }[] = [
  {
    summary: 'The migration fails on any database that already has projects; the rest is sound.',
    observations: [
      {
        id: 'C1',
        text: 'The migration adds owner_id as NOT NULL with no default, so it fails on a table that already has rows.',
        confidence: 80,
        blocking: true,
        evidence: 'ALTER TABLE projects ADD COLUMN owner_id INTEGER NOT NULL',
      },
      { id: 'C2', text: 'No test covers the retry path when the billing API times out.', confidence: 55, blocking: false, evidence: 'test/billing.test.ts has no timeout case.' },
    ],
  },
  {
    summary: 'The retry loop worries me; the migration has the same problem the plan asked about.',
    observations: [
      {
        id: 'O1',
        text: 'The retry loop might hammer the billing API during an outage if the backoff is misconfigured.',
        confidence: 65,
        blocking: true,
        evidence: 'retry(callBilling, { attempts: 5 }) with the default backoff, whose value is not shown in the change.',
      },
      { id: 'O2', text: 'owner_id is NOT NULL without a default or a backfill: existing rows break the migration.', confidence: 85, blocking: true, evidence: 'ALTER TABLE projects ADD COLUMN owner_id INTEGER NOT NULL' },
    ],
  },
];

/** The place of the scripted review that `text` quotes (by its summary), or null: how the tension map's claims call knows its reviewer. */
export function reviewPlace(text: string): number | null {
  const i = REVIEWS.findIndex((r) => text.includes(r.summary));
  return i < 0 ? null : i;
}

function lastText(req: SimRequest): string {
  return req.messages.at(-1)?.content ?? '';
}

/** The lead's, an analyst's or a reviewer's observations; null when the prompt is none of theirs. */
export function demoObservations(req: SimRequest, reviewerIndex: number): string | null {
  const text = lastText(req);
  if (text.includes('You lead this review')) return JSON.stringify(PLAN);
  if (text.includes('You are an analyst on this review')) return JSON.stringify(ANALYST);
  if (text.includes('You are a reviewer.')) return JSON.stringify(REVIEWS[reviewerIndex % REVIEWS.length]);
  return null;
}

/** The filter's list: the two NOT NULL observations merged, the rest kept; sources taken from the ids it was shown. */
export function demoFindings(req: SimRequest): string {
  const refs =
    (req.format as { properties?: { findings?: { items?: { properties?: { sources?: { items?: { enum?: string[] } } } } } } } | null)?.properties?.findings?.items?.properties?.sources?.items?.enum ?? [];
  const of = (...ids: string[]): string[] => refs.filter((r) => ids.some((id) => r.endsWith(`/${id}`)));
  const notNull = of('C1', 'O2');
  // A finding is kept only when an observation it rests on was shown: a reviewer the budget skipped raised nothing.
  const findings = [
    {
      text: 'The migration adds owner_id as NOT NULL with no default or backfill, so it fails on a table that already has rows.',
      confidence: notNull.length > 1 ? 85 : 80,
      blocking: true,
      evidence: 'ALTER TABLE projects ADD COLUMN owner_id INTEGER NOT NULL',
      sources: notNull,
    },
    { text: 'The retry loop may hammer the billing API during an outage if its backoff is misconfigured.', confidence: 65, blocking: false, evidence: 'retry(callBilling, { attempts: 5 }) with the default backoff.', sources: of('O1') },
    { text: 'No test covers the billing timeout path.', confidence: 55, blocking: false, evidence: 'test/billing.test.ts has no timeout case.', sources: of('C2') },
    { text: 'Put the billing change behind a flag.', confidence: 60, blocking: false, evidence: 'Billing errors reach customers directly.', sources: of('A1') },
  ].filter((f) => f.sources.length > 0);
  // The roles the prompt lists without a usable reply (budget skips, failures), named in the summary.
  const gapList = /^Without a usable reply:\n((?:- .*\n?)*)/m.exec(lastText(req))?.[1] ?? '';
  const silent = [...gapList.matchAll(/^- ([^\s:]+):/gm)].map((m) => m[1]!);
  const verdict = notNull.length ? 'Not ready to merge: the migration fails on existing data. Add a default or a backfill, then ship' : 'No blocking problem was found in the reviews shown';
  const summary = [
    `${verdict}${of('O1').length ? '; the retry concern is worth a look but is not established.' : '.'}`,
    ...(silent.length ? [`No usable reply came from ${silent.join(' or ')}, so this report rests on the reviews that ran.`] : []),
  ].join(' ');
  return JSON.stringify({ summary, findings });
}

export function demoArtifact(): string {
  return JSON.stringify({
    title: 'Review: add project owners',
    document: [
      'Verdict: not ready to merge.',
      '',
      'Must fix: the migration adds owner_id as NOT NULL with no default, so it fails on existing rows (raised by both reviewers).',
      '',
      'Worth a look: the retry loop backoff (speculative, downgraded); a test for the billing timeout; a flag for the billing change.',
    ].join('\n'),
  });
}
