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

/**
 * The synthesis of a numeric Delphi run, from its prompt: the recommendation states the panel's
 * median with its unit (sustained writes per second), and each final estimate the prompt lists
 * outside the quartiles is kept as dissent, in the agent's own words from the round where it
 * first gave that answer. Null when the prompt carries no Delphi median.
 */
export function demoDelphiSynthesis(req: SimRequest, ids: readonly string[]): string | null {
  const text = req.messages.at(-1)?.content ?? '';
  const result = /The Delphi result: the median of the final round's estimates is (\S+) \(lower quartile (\S+), upper quartile ([^;]+);/.exec(text);
  if (!result) return null;
  const [, median, q1, q3] = result;
  // Each round's section of the transcript, and what an agent said in it.
  const heads = [...text.matchAll(/^## Round (\d+)/gm)];
  const rounds = heads.map((h, i) => ({ round: Number(h[1]), body: text.slice(h.index, heads[i + 1]?.index ?? text.length) }));
  const said = (agent: string, body: string): { position: string; reason: string } | null => {
    const lines = body.split('\n');
    const at = lines.findIndex((l) => l.startsWith(`[${agent}]`));
    const position = at < 0 ? undefined : lines[at + 1];
    const reason = at < 0 ? undefined : /^ {2}reasoning: (.*)$/.exec(lines[at + 2] ?? '')?.[1];
    return position ? { position, reason: reason ?? '' } : null;
  };
  const dissentList = /outside the quartiles as dissent, with their reasons:\n((?:- .*\n?)*)/.exec(text)?.[1] ?? '';
  const outside = [...dissentList.matchAll(/^- (\S+): (\S+)$/gm)].filter((m) => ids.includes(m[1]!));
  const dissent = outside.flatMap(([, agent, estimate]) => {
    const final = rounds.length ? said(agent!, rounds.at(-1)!.body) : null;
    const first = final ? rounds.find((r) => said(agent!, r.body)?.position === final.position) : undefined;
    const own = first ? said(agent!, first.body) : null;
    if (!first || !own) return [];
    const when = Number(estimate) > Number(median) ? 'later' : 'earlier';
    return [{ agent: agent!, round: first.round, argument: own.position, whyItMatters: `A trigger at ${estimate!} rather than ${median!} writes per second moves the migration ${when}; ${agent!}'s reason: ${own.reason}` }];
  });
  return JSON.stringify({
    recommendation: `Leave SQLite for Postgres once sustained writes reach about ${median!} per second, the panel's median (quartiles ${q1!}–${q3!} writes per second). Until then stay on SQLite behind a repository layer, and rehearse the move once before that rate is reached.`,
    triggersToRevisit: [`Sustained writes above about ${median!} per second`, 'A second service needs to write the same data'],
    confidence: { level: 'high', converged: ids.length },
    restsOn: [...ids],
    minorityPositions: dissent,
    failedAgents: [],
  });
}
