import type { SimRequest } from './server.js';

/**
 * The Delphi demo panel (docs/protocol-delphi.md): each agent names the sustained write rate, in
 * writes per second, at which the team should leave SQLite. They start far apart (80, 10, 50),
 * read each other's numbers without names, and narrow round by round until the spread holds.
 */
const SCRIPT: { estimates: number[]; answers: string[]; reasons: string[] }[] = [
  {
    estimates: [80, 60, 55, 55],
    answers: [
      'Stay on SQLite until sustained writes pass about 80 per second; below that one file in WAL mode is the cheapest thing to run.',
      'Stay on SQLite until sustained writes pass about 60 per second: lower than I said, since the migration should not start at the edge of the limit.',
      'Migrate once sustained writes pass about 55 per second, with the move rehearsed beforehand.',
      'Migrate once sustained writes pass about 55 per second, with the move rehearsed beforehand.',
    ],
    reasons: [
      'SQLite in WAL mode handles over a hundred writes per second on this hardware; the trigger should leave room but not give it away.',
      'An answer above showed that a migration takes weeks, so the trigger has to fire before the limit, not at it.',
      'The median sits near 50 and the reasons for an earlier move (time to migrate under load) are sound; 55 leaves a margin.',
      'No answer gave a new reason to move; I keep 55.',
    ],
  },
  {
    estimates: [10, 35, 45, 45],
    answers: [
      'Migrate to Postgres almost at once: at about 10 sustained writes per second the migration is still cheap.',
      'Migrate at about 35 sustained writes per second; today is too early, but the trigger should be low.',
      'Migrate at about 45 sustained writes per second, with the migration rehearsed once before then.',
      'Migrate at about 45 sustained writes per second, with the migration rehearsed once before then.',
    ],
    reasons: [
      'Migrations get harder as data grows; the cheapest one is the one done early.',
      'The other answers show SQLite has headroom well past 10 writes per second; I keep a low trigger because a late move is the expensive one.',
      'A rehearsed migration removes most of the risk I was guarding against, so the trigger can sit near the median.',
      'The spread is small now and no answer changed the reasons; I keep 45.',
    ],
  },
  {
    estimates: [50, 50, 50, 50],
    answers: [
      'Stay on SQLite behind a repository layer and migrate at about 50 sustained writes per second.',
      'Keep the trigger at about 50 sustained writes per second, behind a repository layer so the move is cheap.',
      'Keep the trigger at about 50 sustained writes per second.',
      'Keep the trigger at about 50 sustained writes per second.',
    ],
    reasons: [
      'A repository layer makes the move a configuration change; 50 writes per second is where lock contention starts to show.',
      'The other answers straddle 50 and none gave a measurement that moves it.',
      'The panel is converging on my number for the reasons I gave.',
      'Nothing new in the other answers.',
    ],
  },
];

/** The reply of the agent at `index` in a Delphi round, read from the prompt's round number. */
export function demoDelphi(req: SimRequest, index: number, numeric: boolean): string {
  const round = Number(/This is Delphi round (\d+)/.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? 0);
  const part = SCRIPT[index % SCRIPT.length]!;
  const at = Math.min(round, part.estimates.length - 1);
  return JSON.stringify({
    answer: part.answers[at],
    ...(numeric ? { estimate: part.estimates[at] } : {}),
    reason: part.reasons[at],
    confidence: 60 + at * 8,
  });
}
