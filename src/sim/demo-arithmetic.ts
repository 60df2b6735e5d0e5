import { createHash } from 'node:crypto';
import type { SimRequest } from './server.js';
import { demoClashUpdates } from './demo-tensions.js';

/**
 * The simulated panel's answers to the built-in `arithmetic` bench suite
 * (`What is the result of a+b*c+d-e*f?`). Each model gets a problem right with a
 * fixed probability (MODEL_ACCURACY; 0.6 for a model not listed), and its wrong
 * answers are the slips people make: a lost minus sign, a product added instead of
 * subtracted, an addition off by ten. Whether a given model gets a given problem
 * right is fixed by the model, the problem and the request (stage, round, sample
 * seed), never by a counter, so the same run gives the same report every time.
 */

/** How often each model answers a problem right on its own. */
export const MODEL_ACCURACY: Readonly<Record<string, number>> = {
  'llama3.2:3b': 0.55,
  'qwen2.5:3b': 0.7,
  'gemma2:2b': 0.45,
  'qwen2.5:1.5b': 0.4,
  'phi3.5:3.8b': 0.65,
  'llama3.1:8b': 0.75,
  'qwen2.5:7b': 0.8,
  'qwen2.5:14b': 0.85,
  'mistral-nemo:12b': 0.75,
  'mistral:7b': 0.6,
  'gemma2:9b': 0.75,
};

export const DEFAULT_ACCURACY = 0.6;

const PROBLEM = /What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?/;

export function accuracyOf(model: string): number {
  return MODEL_ACCURACY[model] ?? MODEL_ACCURACY[model.replace(/:latest$/, '')] ?? DEFAULT_ACCURACY;
}

/** A number in [0, 1) fixed by its inputs. */
function chance(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join('\u0000')).digest().readUInt32BE(0) / 2 ** 32;
}

interface Problem {
  text: string;
  operands: number[];
  gold: number;
}

function problemIn(req: SimRequest): Problem | null {
  const all = req.messages.map((m) => m.content).join('\n');
  const m = PROBLEM.exec(all);
  if (!m) return null;
  const operands = m.slice(1).map(Number);
  const [a, b, c, d, e, f] = operands as [number, number, number, number, number, number];
  return { text: m[0], operands, gold: a + b * c + d - e * f };
}

function slip(p: Problem, ...salt: (string | number)[]): number {
  const [a, b, c, d, e, f] = p.operands as [number, number, number, number, number, number];
  const usual = [p.gold < 0 ? -p.gold : p.gold + 10, a + b * c + d + e * f, p.gold - 10];
  const r = chance('slip', p.text, ...salt);
  return usual[r < 0.5 ? 0 : r < 0.8 ? 1 : 2]!;
}

function solve(model: string, p: Problem, ...salt: (string | number)[]): number | null {
  const skill = accuracyOf(model);
  // The weakest models now and then forget to state a number at all.
  if (chance('blank', model, p.text, ...salt) < 0.16 * (1 - skill)) return null;
  return chance('solve', model, p.text, ...salt) < skill ? p.gold : slip(p, model, ...salt);
}

const stated = (n: number | null): string =>
  n === null ? 'I would need to recompute this carefully before committing to a figure.' : `Working left to right with multiplication first. Final answer: ${n}`;
const numberIn = (text: string): number | null => {
  const m = /Final answer: (-?\d+)/.exec(text);
  return m ? Number(m[1]) : null;
};

function majority(values: (number | null)[]): { value: number | null; count: number } {
  const counts = new Map<number, number>();
  for (const v of values) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: { value: number | null; count: number } = { value: null, count: 0 };
  for (const [value, count] of counts) if (count > best.count) best = { value, count };
  return best;
}

/** An agent's figure after reading its peers': a right one mostly holds, a wrong one may be corrected or follow the crowd. */
function revised(model: string, p: Problem, round: number, own: number | null, peers: (number | null)[]): number | null {
  const crowd = majority(peers);
  const r = chance('update', model, p.text, round);
  if (own === p.gold) {
    // Right answers mostly hold, but a unanimous wrong crowd sometimes talks an agent out of one.
    return crowd.value !== null && crowd.value !== p.gold && crowd.count === peers.length && r < 0.4 ? crowd.value : own;
  }
  if (r < accuracyOf(model) * 0.4) return p.gold;
  if (crowd.value !== null && crowd.count >= 2) return crowd.value;
  return own === null ? solve(model, p, 'retry', round) : own;
}

/**
 * The reply to an arithmetic item, or null when the request is not about one.
 * `keys` are the properties of the requested schema, which tell the stage apart.
 */
export function arithmeticReply(req: SimRequest, keys: Set<string>): string | null {
  const p = problemIn(req);
  if (!p) return null;
  const prompt = req.messages.at(-1)?.content ?? '';
  if (keys.has('position')) {
    return JSON.stringify({ position: stated(solve(req.model, p, 'opening')), reasoning: 'Multiplications first, then left to right.', confidence: 70 });
  }
  if (keys.has('updatedPosition')) {
    const round = Number(/critique round (\d+)/.exec(prompt)?.[1] ?? 1);
    const own = numberIn(/Your position after the previous round:\n(.*)/.exec(prompt)?.[1] ?? '');
    const peers = [...prompt.matchAll(/\[[\w.-]+\](?: \(shortened to fit\))?\n(.*)/g)].map((m) => numberIn(m[1]!));
    let next: number | null;
    if (prompt.includes("the panel's devil's advocate")) {
      // Briefed to argue against the majority: the advocate states another figure than the crowd's.
      const crowd = majority(peers);
      const r = chance('update', req.model, p.text, round);
      const others = [p.gold, slip(p, req.model, 'advocate', round), ...[0, 1, 2].map((k) => slip(p, 'advocate', k))].filter((n) => n !== crowd.value);
      next = others[Math.floor(r * others.length)] ?? own;
    } else {
      next = revised(req.model, p, round, own, peers);
    }
    // With a tension map on, the schema asks for a stance on each open clash: the agent keeps its own.
    return JSON.stringify({ agreements: [], disagreements: [], updatedPosition: stated(next), confidence: 75, ...(keys.has('clashUpdates') ? { clashUpdates: demoClashUpdates(req, round) } : {}) });
  }
  // A Delphi round (docs/protocol-delphi.md): the others' answers come unnamed, each with its number.
  if (keys.has('answer') && keys.has('reason')) {
    const round = Number(/This is Delphi round (\d+)/.exec(prompt)?.[1] ?? 0);
    const own = numberIn(/Your answer in round \d+:\n(.*)/.exec(prompt)?.[1] ?? '');
    const peers = [...prompt.matchAll(/^Answer \d+(?: \(shortened to fit\))?:\n(.*)/gm)].map((m) => numberIn(m[1]!));
    const n = round === 0 ? solve(req.model, p, 'opening') : revised(req.model, p, round, own, peers);
    // A later round's schema asks for a number, so even an unsure model states one.
    const estimate = keys.has('estimate') ? { estimate: n ?? (round === 0 ? null : slip(p, req.model, 'unsure', round)) } : {};
    return JSON.stringify({ answer: stated(n), ...estimate, reason: 'Multiplications first, then left to right.', confidence: 70 });
  }
  if (keys.has('caveats')) {
    const held = [...prompt.matchAll(/\[([\w.-]+)\](?: \(shortened\))?\n(.*)/g)].map((m) => ({ agent: m[1]!, n: numberIn(m[2]!) }));
    const answers = held.map((h) => h.n);
    const agree = majority(answers).count / Math.max(1, answers.length);
    const percent = Math.round(agree * 100);
    const score = { rationale: `${percent}% give the same figure.`, recommendation: percent, facts: percent, caveats: percent };
    if (!keys.has('stances')) return JSON.stringify(score);
    // One stance per figure, named by it, so the same figure keeps its id from round to round.
    const stances = new Map<string, string[]>();
    for (const h of held) {
      const id = h.n === null ? 'no figure' : `= ${h.n}`;
      stances.set(id, [...(stances.get(id) ?? []), h.agent]);
    }
    return JSON.stringify({ ...score, stances: [...stances].map(([id, agents]) => ({ id, summary: id === 'no figure' ? 'States no figure.' : `The result is ${id.slice(2)}.`, agents })) });
  }
  if (keys.has('triggersToRevisit')) {
    const lastRound = prompt.split('## Round').at(-1) ?? '';
    const round = Number(/^ (\d+)/.exec(lastRound)?.[1] ?? 0);
    const finals = [...lastRound.matchAll(/\[([\w.-]+)\][^\n]*\n(.*)/g)].map((m) => ({ agent: m[1]!, n: numberIn(m[2]!) }));
    const top = majority(finals.map((f) => f.n));
    const dissent = finals.filter((f) => f.n !== null && f.n !== top.value);
    return JSON.stringify({
      recommendation: top.value === null ? 'The panel gave no usable figure.' : `The panel's figure is ${top.value}. Final answer: ${top.value}`,
      triggersToRevisit: ['a recomputation disagrees'],
      confidence: { level: top.count === finals.length ? 'high' : 'medium', converged: top.count },
      restsOn: finals.filter((f) => f.n !== null && f.n === top.value).map((f) => f.agent),
      minorityPositions: dissent.map((f) => ({ agent: f.agent, round, argument: `The result is ${f.n}.`, whyItMatters: 'A slip in one step changes the figure.' })),
      failedAgents: [],
    });
  }
  if (keys.has('vote')) {
    // Voters endorse a position that reaches their own figure, and reject the others.
    const artifact = numberIn(/<<<POSITION\n([\s\S]*?)\nPOSITION>>>/.exec(prompt)?.[1] ?? '');
    const own = numberIn(/Your own final position, for reference:\n(.*)/.exec(prompt)?.[1] ?? '');
    const yes = artifact !== null && (artifact === own || (own === null && artifact === p.gold));
    return JSON.stringify({ reason: yes ? 'Same figure as mine.' : 'A different figure from mine.', vote: yes ? 'YES' : 'NO' });
  }
  if (keys.has('answer') && /This is revision \d+\./.test(prompt)) {
    // The bench's self-correction control: the agent re-examines its own answer with no peers.
    // It fixes a slip with the same chance, drawn from the same numbers, as in a critique round,
    // so only the crowd's pull differs between the two.
    const round = Number(/This is revision (\d+)\./.exec(prompt)?.[1] ?? 1);
    const own = numberIn(/Your answer so far:\n([\s\S]*?)\n\nThis is revision/.exec(prompt)?.[1] ?? '');
    const r = chance('update', req.model, p.text, round);
    const next = own === p.gold ? own : r < accuracyOf(req.model) * 0.4 ? p.gold : (own ?? solve(req.model, p, 'retry', round) ?? slip(p, req.model, 'unsure', round));
    return JSON.stringify({ reasoning: 'Rechecked the multiplications first.', answer: next });
  }
  if (keys.has('answer')) {
    // Self-consistency samples differ by their seed; a single answer has none.
    const seed = typeof req.options.seed === 'number' ? req.options.seed : 'none';
    // The schema sent asks for a number, so even an unsure model states one.
    const n = solve(req.model, p, 'alone', seed) ?? slip(p, req.model, 'unsure', seed);
    return JSON.stringify({ reasoning: 'Multiplications first.', answer: n });
  }
  return null;
}
