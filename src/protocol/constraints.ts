/**
 * Typed constraints: what an answer requires, prohibits or prefers, each about a subject. The
 * engine merges them across the panel (and across a decomposition's sub-answers): the same
 * constraint stated twice is one, with both authors; one side requiring what another prohibits,
 * on the same subject, is a collision the synthesis must resolve. The user's `--constraint`
 * texts join from `user` (a "never …" text prohibits, a "prefer …" text prefers, any other
 * requires), and a user's hard constraint outranks every agent. Pure: no I/O.
 */

export const constraintKinds = ['requires', 'prohibits', 'prefers'] as const;
export type ConstraintKind = (typeof constraintKinds)[number];

export interface StatedConstraint {
  kind: ConstraintKind;
  subject: string;
  detail: string;
}

/** One constraint after the merge: every author who stated it, each detail as worded. */
export interface MergedConstraint {
  kind: ConstraintKind;
  /** The subject as first stated. */
  subject: string;
  /** The matching key of the subject (see `subjectKey`). */
  key: string;
  authors: string[];
  details: string[];
}

export interface Collision {
  /** C1, C2, … in the order of the subjects' first mention. */
  id: string;
  subject: string;
  key: string;
  requires: { authors: string[]; details: string[] };
  prohibits: { authors: string[]; details: string[] };
  /** True when the user's own constraint is one side: the user outranks the agents. */
  userBinding: boolean;
  /** Which side the user holds when `userBinding` (absent in records made before the user could prohibit: then `requires`). */
  userSide?: 'requires' | 'prohibits';
}

export interface ConstraintMerge {
  constraints: MergedConstraint[];
  collisions: Collision[];
}

/** The author of the `--constraint` texts in a merge. */
export const USER_AUTHOR = 'user';

/** Words that do not tell one subject from another. */
const STOP_WORDS = new Set(
  'a an the of to for in on at by with and or any all some no not this that these those its it be is are was were our your their my we you they using use via per'.split(' '),
);

/**
 * How two subjects are matched: lower-cased, accents and punctuation dropped, stop words
 * dropped, a plural `s` dropped from words longer than three letters, and the remaining words
 * sorted. "The PostgreSQL database", "postgresql databases" and "databases: PostgreSQL" share
 * the key `database postgresql`; "Postgres" does not (no synonyms, no stemming beyond the plural).
 */
export function subjectKey(subject: string): string {
  const words = subject
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .split(' ')
    .filter((w) => w !== '' && !STOP_WORDS.has(w))
    .map((w) => (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w));
  return [...new Set(words)].sort().join(' ');
}

/** Leading words that turn a user's constraint into a prohibition, or into a (soft) preference. */
const PROHIBIT_LEAD = /^(?:never|no|not|avoid|without|must not|mustn't|do not|don't|does not|doesn't|shall not|cannot|can't|should not|shouldn't)\s+/i;
const PREFER_LEAD = /^(?:prefer(?:ably)?|ideally|preferably|if possible,?)\s+/i;

/**
 * A user's `--constraint` text as a typed constraint: "never X", "no X", "avoid X", "do not X"
 * prohibit X; "prefer X", "ideally X" prefer X (soft: it never collides); any other text
 * requires itself. The detail keeps the text as the user wrote it.
 */
export function userConstraint(text: string): StatedConstraint {
  const trimmed = text.trim();
  const prohibit = PROHIBIT_LEAD.exec(trimmed);
  if (prohibit && trimmed.length > prohibit[0].length) return { kind: 'prohibits', subject: trimmed.slice(prohibit[0].length), detail: trimmed };
  const prefer = PREFER_LEAD.exec(trimmed);
  if (prefer && trimmed.length > prefer[0].length) return { kind: 'prefers', subject: trimmed.slice(prefer[0].length), detail: trimmed };
  return { kind: 'requires', subject: trimmed, detail: trimmed };
}

/** Merges the constraints each author stated; `user` texts are read by `userConstraint`. */
export function mergeConstraints(stated: readonly { author: string; constraint: StatedConstraint }[], userTexts: readonly string[] = []): ConstraintMerge {
  const all = [...userTexts.map((text) => ({ author: USER_AUTHOR, constraint: userConstraint(text) })), ...stated];
  const merged: MergedConstraint[] = [];
  const order: string[] = [];
  for (const { author, constraint } of all) {
    const key = subjectKey(constraint.subject);
    if (key === '') continue;
    if (!order.includes(key)) order.push(key);
    let entry = merged.find((m) => m.key === key && m.kind === constraint.kind);
    if (!entry) {
      entry = { kind: constraint.kind, subject: constraint.subject.trim(), key, authors: [], details: [] };
      merged.push(entry);
    }
    if (!entry.authors.includes(author)) entry.authors.push(author);
    const detail = constraint.detail.trim();
    if (detail !== '' && !entry.details.includes(detail)) entry.details.push(detail);
  }
  const collisions: Collision[] = [];
  for (const key of order) {
    const requires = merged.find((m) => m.key === key && m.kind === 'requires');
    const prohibits = merged.find((m) => m.key === key && m.kind === 'prohibits');
    if (!requires || !prohibits) continue;
    const userRequires = requires.authors.includes(USER_AUTHOR);
    const userProhibits = prohibits.authors.includes(USER_AUTHOR);
    collisions.push({
      id: `C${collisions.length + 1}`,
      subject: requires.subject,
      key,
      requires: { authors: requires.authors, details: requires.details },
      prohibits: { authors: prohibits.authors, details: prohibits.details },
      userBinding: userRequires || userProhibits,
      ...(userRequires || userProhibits ? { userSide: userRequires ? ('requires' as const) : ('prohibits' as const) } : {}),
    });
  }
  // The user's first, then in order of first mention.
  merged.sort((a, b) => Number(b.authors.includes(USER_AUTHOR)) - Number(a.authors.includes(USER_AUTHOR)) || order.indexOf(a.key) - order.indexOf(b.key));
  return { constraints: merged, collisions };
}

/** Authors in words: `user` is "the user". */
function who(authors: readonly string[]): string {
  return authors.map((a) => (a === USER_AUTHOR ? 'the user' : a)).join(', ');
}

/** One merged constraint in words, as the synthesizer reads it and every view shows it: `requires X (alpha): detail`. */
export function constraintText(c: MergedConstraint): string {
  const details = c.details.filter((d) => d !== c.subject);
  return `${c.kind} ${c.subject} (${who(c.authors)})${details.length ? `: ${details.join(' / ')}` : ''}`;
}

/** One collision in words, as the synthesizer reads it and every view shows it: `"X": alpha requires it (…); beta prohibits it (…)`. */
export function collisionText(k: Collision): string {
  const detail = (details: readonly string[]): string => details.join(' / ') || 'no detail';
  return `"${k.subject}": ${who(k.requires.authors)} requires it (${detail(k.requires.details)}); ${who(k.prohibits.authors)} prohibit${k.prohibits.authors.length === 1 ? 's' : ''} it (${detail(k.prohibits.details)})`;
}

/** The section of the synthesizer's (or reassembler's) prompt: the merged constraints, then each collision to resolve. */
export function constraintSection(merge: ConstraintMerge): string | null {
  if (merge.constraints.length === 0) return null;
  const lines = ['Constraints the answers stated, merged (the user\'s are binding and come first):'];
  for (const c of merge.constraints) lines.push(`- ${constraintText(c)}`);
  if (merge.collisions.length > 0) {
    lines.push('', 'Collisions your answer must resolve (one side requires what the other prohibits):');
    for (const k of merge.collisions) lines.push(`- ${k.id} on ${collisionText(k)}.${k.userBinding ? ` ${userRuling(k)}` : ''}`);
    lines.push('For each collision, say in "collisionResolutions" how the recommendation resolves it: which side it follows, or how it satisfies both.');
  }
  return lines.join('\n');
}

/** What a collision the user is party to requires of the answer: the user's side wins. */
export function userRuling(k: Collision): string {
  return (k.userSide ?? 'requires') === 'requires' ? 'The user requires it: keep it.' : 'The user prohibits it: leave it out.';
}

/** What a turn may state: an opening's or a critique's constraints and trade-offs. */
interface StatingTurn {
  agentId: string;
  status: string;
  opening: { constraints?: StatedConstraint[]; tradeOffs?: string[] } | null;
  critique: { constraints?: StatedConstraint[]; tradeOffs?: string[] } | null;
}

/**
 * Each panelist's constraints and trade-offs as of its latest usable turn that stated any
 * (a critique that states none leaves the opening's standing), in panel order.
 */
export function statedInRounds(
  rounds: readonly { turns: readonly StatingTurn[] }[],
  panel: readonly string[],
): { constraints: { author: string; constraint: StatedConstraint }[]; tradeOffs: { agentId: string; tradeOff: string }[] } {
  const constraints: { author: string; constraint: StatedConstraint }[] = [];
  const tradeOffs: { agentId: string; tradeOff: string }[] = [];
  for (const agentId of panel) {
    const turns = rounds.flatMap((r) => r.turns.filter((t) => t.agentId === agentId && t.status === 'ok')).reverse();
    const latest = (pick: (body: NonNullable<StatingTurn['opening']>) => unknown[] | undefined): unknown[] => {
      for (const t of turns) {
        const found = pick(t.critique ?? t.opening ?? {});
        if (found?.length) return found;
      }
      return [];
    };
    for (const c of latest((b) => b.constraints) as StatedConstraint[]) constraints.push({ author: agentId, constraint: c });
    for (const t of latest((b) => b.tradeOffs) as string[]) tradeOffs.push({ agentId, tradeOff: t });
  }
  return { constraints, tradeOffs };
}
