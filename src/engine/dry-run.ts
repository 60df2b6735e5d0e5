import type { Preset, ProtocolKind } from '../config/preset-schema.js';
import { type Advice, adviceMessages, applyAdvice, depths } from '../protocol/advice.js';
import { estimateTokens } from '../protocol/context.js';
import type { SchedulePlan } from '../schedule/plan.js';
import { synthesizerModel } from '../config/synthesizer.js';
import { ADVICE_REPLY_TOKENS, advisorModel, asKind, protocolChoices } from './advisor.js';

/**
 * What a run would do, without making it: the calls it makes at most, their tokens and a time,
 * all estimates. Calls are an upper bound (the judge can stop a debate early); tokens assume every
 * reply uses its whole `maxAnswerTokens`; time assumes a decode rate from each model's size.
 */
export interface CallGroup {
  what: string;
  model: string;
  calls: number;
  /** Prompt tokens of one call, estimated. */
  promptTokens: number;
  /** Reply tokens of one call at most. */
  replyTokens: number;
}

export interface DryRunEstimate {
  protocol: string;
  groups: CallGroup[];
  calls: number;
  tokens: number;
  /** Seconds, or null when no call is estimated. */
  seconds: number | null;
  notes: string[];
  /** With `auto`: every protocol the advisor may pick; the groups and totals above are the dearest's. */
  range?: AutoRange;
}

/** A protocol the advisor may pick, as the preset would run it, its calls, tokens and time counting the advisor's call. */
export interface AutoChoice {
  protocol: ProtocolKind;
  /** The question's depth where it changes the run (a shallow debate holds 2 critique rounds at most, a shallow decomposition 3 sub-questions); null where it changes nothing. */
  depth: Advice['depth'] | null;
  calls: number;
  tokens: number;
  seconds: number | null;
}

/** `auto`'s estimate: the advisor picks the protocol when the run starts, so a dry run gives the range over what it may pick. */
export interface AutoRange {
  /** The advisor's own call, counted in every choice. */
  advisor: CallGroup;
  /** What orders the choices: the time, or the tokens where a model's size is unknown. */
  rankedBy: 'time' | 'tokens';
  /** Each protocol (at each depth that changes it) the advisor may pick, cheapest first. */
  choices: AutoChoice[];
  cheapest: AutoChoice;
  dearest: AutoChoice;
}

const MATCH_CRITIQUES = 'match critiques: the two players of each match';
/** The decomposer's own calls that are no part's answer. */
const SPLIT = 'the split';
const REASSEMBLY = 'the reassembly';

/** Memory bandwidth assumed for the time estimate: a workstation GPU decodes about this many bytes of weights per second. */
export const ASSUMED_BANDWIDTH_BYTES = 400e9;
/** Prompt tokens are read this many times faster than reply tokens are written. */
const PREFILL_SPEEDUP = 20;

export function estimateRun(preset: Preset, question: string, sizeOf: (model: string) => number | null, plan?: SchedulePlan): DryRunEstimate {
  if (preset.protocol.kind === 'auto') return estimateAuto(preset, question, sizeOf, plan, protocolCalls);
  const calls = protocolCalls(preset, question, sizeOf);
  return withTotals({ protocol: preset.protocol.kind, groups: calls.groups, notes: calls.notes }, sizeOf, plan, calls.rounds);
}

/** The calls of one run (or one bench item) of a preset whose protocol is fixed. */
interface RunCalls {
  groups: CallGroup[];
  /** What bounds the calls. */
  notes: string[];
  /** How many times each model may load, for the time of a panel that does not fit in VRAM. */
  rounds: number;
}
type CallsOf = (preset: Preset, question: string, sizeOf: (model: string) => number | null) => RunCalls;

/**
 * `auto`: the advisor classifies the question when the run starts, and the rules pick the protocol
 * from it among those the panel can run (a debate when the advisor fails). Each of them is counted
 * as it would run, at both depths where the depth changes it, with the advisor's call. The groups
 * and totals are the dearest choice's, so that they stay an upper bound like any protocol's.
 */
function estimateAuto(preset: Preset, question: string, sizeOf: (model: string) => number | null, plan: SchedulePlan | undefined, callsOf: CallsOf): DryRunEstimate {
  const allowed = protocolChoices(preset);
  const kinds = [...new Set<ProtocolKind>([...allowed, 'debate'])];
  const prompt = adviceMessages(question, allowed, preset.agents.map((a) => a.id)).map((m) => m.content).join('\n');
  const advisor: CallGroup = { what: 'the advisor: the question classified', model: advisorModel(preset), calls: 1, promptTokens: estimateTokens(prompt), replyTokens: ADVICE_REPLY_TOKENS };
  const estimated = kinds.flatMap((kind) => {
    const atDepth = depths.map((depth) => {
      // Only the depth changes what runs; the rest of a classification sets the brief and the budget, which the estimate does not read.
      const advice: Advice = { domains: [], parts: 'one', depth, pattern: 'single-domain', reason: '' };
      const calls = callsOf(applyAdvice(asKind(preset, kind), advice, kind), question, sizeOf);
      const total = withTotals({ protocol: kind, groups: [advisor, ...calls.groups], notes: [] }, sizeOf, plan, calls.rounds);
      return { choice: { protocol: kind, depth: depth as AutoChoice['depth'], calls: total.calls, tokens: total.tokens, seconds: total.seconds }, calls, total };
    });
    const [shallow, deep] = atDepth as [(typeof atDepth)[number], (typeof atDepth)[number]];
    return shallow.choice.calls === deep.choice.calls && shallow.choice.tokens === deep.choice.tokens ? [{ ...deep, choice: { ...deep.choice, depth: null } }] : atDepth;
  });
  // Time is what a run costs, but a size unknown for any choice's model leaves that choice's time short: then tokens rank them.
  const unknown = new Set(estimated.flatMap((e) => e.total.groups).map((g) => g.model).filter((m) => !((sizeOf(m) ?? 0) > 0)));
  const rankedBy = unknown.size === 0 && estimated.every((e) => e.choice.seconds !== null) ? 'time' : 'tokens';
  const cost = (c: AutoChoice): number => (rankedBy === 'time' ? (c.seconds ?? 0) : c.tokens);
  estimated.sort((x, y) => cost(x.choice) - cost(y.choice) || x.choice.tokens - y.choice.tokens || x.choice.calls - y.choice.calls);
  const cheapest = estimated[0]!;
  const dearest = estimated[estimated.length - 1]!;
  const label = autoChoiceLabel(dearest.choice);
  return {
    ...dearest.total,
    protocol: 'auto',
    notes: [
      `The advisor (${advisor.model}) picks the protocol when the run starts, from its reading of the question, so no dry run can know which: for ${preset.name} it may pick ${orList(kinds)}. Each figure counts the advisor's own call.`,
      ...dearest.calls.notes.map((n) => `If it picks ${label} (the advisor's call aside): ${n.charAt(0).toLowerCase()}${n.slice(1)}`),
      ...dearest.total.notes.filter((n) => !n.startsWith(NO_SIZE)),
      ...(unknown.size > 0 ? [noSizeNote(unknown)] : []),
    ],
    range: { advisor, rankedBy, choices: estimated.map((e) => e.choice), cheapest: cheapest.choice, dearest: dearest.choice },
  };
}

/** `debate`, or `debate on a shallow question` where the depth changes what a debate does. */
export function autoChoiceLabel(choice: AutoChoice): string {
  return choice.depth === null ? choice.protocol : `${choice.protocol} on a ${choice.depth} question`;
}

function orList(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]!}`;
}

/** The calls of a preset whose protocol is fixed, with the notes that bound them and the rounds its models load for. */
function protocolCalls(preset: Preset, question: string, sizeOf: (model: string) => number | null): RunCalls {
  const kind = preset.protocol.kind;
  const n = preset.agents.length;
  const answer = preset.protocol.maxAnswerTokens;
  const q = estimateTokens(question) + 200;
  const persona = Math.max(0, ...preset.agents.map((a) => estimateTokens(a.persona ?? '')));
  const rounds = kind === 'debate' || kind === 'delphi' ? 1 + preset.protocol.maxRounds : kind === 'oxford' ? 3 : 1;
  const groups: CallGroup[] = [];
  const notes: string[] = [];
  const synthesizer = synthesizerModel(preset);
  if (kind === 'debate' || kind === 'parallel') {
    for (const a of preset.agents) {
      groups.push({ what: `${a.id}: round 0`, model: a.model, calls: 1, promptTokens: q + persona, replyTokens: answer });
      if (rounds > 1) groups.push({ what: `${a.id}: critique rounds`, model: a.model, calls: rounds - 1, promptTokens: q + persona + (n - 1) * answer, replyTokens: answer });
    }
    if (kind === 'debate') groups.push({ what: 'judge, each round', model: preset.judge.model, calls: rounds, promptTokens: q + n * answer, replyTokens: answer });
    groups.push(...tensionGroups(preset, q, persona, answer, sizeOf));
    if (preset.voting) groups.push({ what: 'cluster vote: ballots', model: preset.judge.model, calls: n * (n - 1), promptTokens: q + 2 * answer, replyTokens: 200 });
    groups.push({ what: 'synthesis', model: synthesizer, calls: 1, promptTokens: q + rounds * n * answer, replyTokens: answer });
    if (kind === 'debate' && rounds > 1) notes.push(`Calls are an upper bound: the judge stops the debate once it scores ${preset.protocol.convergenceThreshold} or more, often after round 1 or 2.`);
  } else if (kind === 'oxford') {
    // A speaker reads the other side's speeches: at most the larger side's.
    const others = n - Math.floor(n / 2);
    for (const a of preset.agents) {
      groups.push({ what: `${a.id}: opening`, model: a.model, calls: 1, promptTokens: q + persona, replyTokens: answer });
      groups.push({ what: `${a.id}: rebuttal and closing`, model: a.model, calls: 2, promptTokens: q + persona + (1 + others) * answer, replyTokens: answer });
    }
    groups.push({ what: 'judge, the verdict', model: preset.judge.model, calls: 1, promptTokens: q + rounds * n * answer, replyTokens: answer });
    groups.push({ what: 'synthesis', model: synthesizer, calls: 1, promptTokens: q + rounds * n * answer, replyTokens: answer });
  } else if (kind === 'delphi') {
    for (const a of preset.agents) {
      groups.push({ what: `${a.id}: round 0`, model: a.model, calls: 1, promptTokens: q + persona, replyTokens: answer });
      if (rounds > 1) groups.push({ what: `${a.id}: anonymous rounds`, model: a.model, calls: rounds - 1, promptTokens: q + persona + (n - 1) * answer, replyTokens: answer });
    }
    groups.push({ what: 'judge, each round (a question with no number)', model: preset.judge.model, calls: rounds, promptTokens: q + n * answer, replyTokens: answer });
    groups.push({ what: 'synthesis', model: synthesizer, calls: 1, promptTokens: q + rounds * n * answer, replyTokens: answer });
    notes.push('Calls are an upper bound: the judge runs only when the question asks for no number, and the rounds stop once the spread stops narrowing.');
  } else if (kind === 'tournament') {
    // Every agent answers; the round-0 answers are mapped; each of the n − 1 matches is two critiques and a verdict.
    for (const a of preset.agents) groups.push({ what: `${a.id}: round 0`, model: a.model, calls: 1, promptTokens: q + persona, replyTokens: answer });
    groups.push(...tensionGroups(preset, q, persona, answer, sizeOf));
    // Who plays which match is known only from the seeds: counted at the panel's largest model.
    groups.push({ what: MATCH_CRITIQUES, model: largestModel(preset, sizeOf), calls: 2 * (n - 1), promptTokens: q + persona + 2 * answer, replyTokens: answer });
    groups.push({ what: 'judge, a verdict per match', model: preset.judge.model, calls: n - 1, promptTokens: q + 4 * answer, replyTokens: answer });
    groups.push({ what: 'synthesis', model: synthesizer, calls: 1, promptTokens: q + 4 * answer, replyTokens: answer });
  } else if (kind === 'pipeline') {
    // Lead and analysts start from the question; each reviewer reads the plan and the observations; the filter reads everything.
    const role = (a: (typeof preset.agents)[number]) => a.role ?? 'reviewer';
    const analysts = preset.agents.filter((a) => role(a) === 'analyst').length;
    const reviewers = preset.agents.filter((a) => role(a) === 'reviewer');
    for (const a of preset.agents) {
      if (role(a) === 'lead') groups.push({ what: `${a.id}: the plan`, model: a.model, calls: 1, promptTokens: q + persona, replyTokens: answer });
      if (role(a) === 'analyst') groups.push({ what: `${a.id}: observations`, model: a.model, calls: 1, promptTokens: q + persona, replyTokens: answer });
      if (role(a) === 'reviewer') groups.push({ what: `${a.id}: review`, model: a.model, calls: 1, promptTokens: q + persona + (1 + analysts) * answer, replyTokens: answer });
    }
    // The map compares the reviews alone, and a pipeline holds no targeted exchange.
    groups.push(...tensionGroups(preset, q, persona, answer, sizeOf, reviewers.length).slice(0, 1));
    const filter = preset.agents.find((a) => role(a) === 'filter');
    groups.push({ what: `${filter?.id ?? 'synthesizer'}: the filter's report`, model: filter?.model ?? synthesizer, calls: 1, promptTokens: q + n * answer, replyTokens: answer });
  } else if (kind === 'decompose') {
    // How many parts there are is the decomposer's choice: every one the preset allows is counted, each failing once.
    const lead = preset.agents.find((a) => a.id === preset.protocol.decomposer) ?? preset.agents[0]!;
    const workers = preset.agents.filter((a) => a !== lead);
    const parts = preset.protocol.maxSubQuestions ?? 6;
    groups.push({ what: `${lead.id}: ${SPLIT}`, model: lead.model, calls: 1, promptTokens: q + persona, replyTokens: answer });
    workers.forEach((a, i) => {
      const assigned = Math.max(0, Math.ceil((parts - i) / workers.length));
      if (assigned > 0) groups.push({ what: `${a.id}: sub-answers`, model: a.model, calls: assigned, promptTokens: q + persona + (parts - 1) * answer, replyTokens: answer });
    });
    groups.push({ what: `${lead.id}: fallback analyses, one per failed part`, model: lead.model, calls: parts, promptTokens: q + persona + parts * answer, replyTokens: answer });
    // The map compares agents: each agent's parts read as its answer, the decomposer's fallbacks as its own.
    const mapped = tensionGroups(preset, q, persona, answer, sizeOf, Math.min(preset.agents.length, parts));
    groups.push(...mapped);
    groups.push({ what: `${lead.id}: ${REASSEMBLY}`, model: lead.model, calls: 1, promptTokens: q + parts * answer, replyTokens: answer });
    const most = groups.reduce((s, g) => s + g.calls, 0);
    notes.push(
      `Calls depend on the decomposer's split: from 3 (one sub-question, answered) to ${most} (all ${parts} sub-questions of protocol.maxSubQuestions, each failing and rewritten by ${lead.id}${mapped.length ? ', the tension map over every agent' : ''}); ${most - parts} when no part fails.`,
    );
  }
  return { groups, notes, rounds };
}

/** The tension map over the panel's independent answers, and the targeted exchange on its worst clash. */
function tensionGroups(preset: Preset, q: number, persona: number, answer: number, sizeOf: (model: string) => number | null, n = preset.agents.length): CallGroup[] {
  if (!preset.tensions?.enabled || n < 2) return [];
  const model = preset.tensions.model ?? preset.judge.model;
  const pairs = (n * (n - 1)) / 2;
  const groups: CallGroup[] = [{ what: 'tension map: claims, clashes, map', model, calls: n + Math.ceil(pairs / preset.tensions.pairsPerCall) + 1, promptTokens: q + n * answer, replyTokens: answer }];
  // The two agents of the worst clash, known only once it is found: counted at the panel's largest model.
  if (preset.tensions.round2.enabled) groups.push({ what: 'targeted exchange: the two agents of the worst clash', model: largestModel(preset, sizeOf), calls: 2, promptTokens: q + persona + 2 * answer, replyTokens: answer });
  return groups;
}

function largestModel(preset: Preset, sizeOf: (model: string) => number | null): string {
  return preset.agents.map((a) => a.model).reduce((x, y) => ((sizeOf(y) ?? 0) > (sizeOf(x) ?? 0) ? y : x));
}

/**
 * One bench item of a preset: its debate, then the baselines (each agent alone, self-consistency
 * with as many samples as the debate's debater calls at most, the self-correction control's
 * revisions, one per critique turn, and a synthesis over round 0).
 */
export function estimateBenchItem(preset: Preset, question: string, sizeOf: (model: string) => number | null, plan?: SchedulePlan): DryRunEstimate {
  if (preset.protocol.kind === 'auto') return estimateAuto(preset, question, sizeOf, plan, benchCalls);
  const item = benchCalls(preset, question, sizeOf);
  return withTotals({ protocol: preset.protocol.kind, groups: item.groups, notes: item.notes }, sizeOf, plan, item.rounds);
}

function benchCalls(preset: Preset, question: string, sizeOf: (model: string) => number | null): RunCalls {
  const debate = protocolCalls(preset, question, sizeOf);
  const answer = preset.protocol.maxAnswerTokens;
  const q = estimateTokens(question) + 200;
  const n = preset.agents.length;
  // A tournament's critiques are agent turns too, whoever plays them; a decomposition's parts and fallbacks are, its split and reassembly are not.
  const matches = debate.groups.find((g) => g.what === MATCH_CRITIQUES);
  const turn = (g: CallGroup): boolean => g === matches || (preset.agents.some((a) => g.what.startsWith(`${a.id}: `)) && !g.what.endsWith(`: ${SPLIT}`) && !g.what.endsWith(`: ${REASSEMBLY}`));
  const k = debate.groups.filter(turn).reduce((s, g) => s + g.calls, 0);
  // The parallel baseline synthesizes independent answers: only the protocols with a round 0 of them have it.
  const kind = preset.protocol.kind;
  const parallel = kind === 'debate' || kind === 'tournament' || kind === 'delphi';
  const baselines: CallGroup[] = [
    ...preset.agents.map((a) => ({ what: `baseline: ${a.id} alone`, model: a.model, calls: 1, promptTokens: q, replyTokens: answer })),
    { what: 'baseline: self-consistency', model: preset.agents[0]!.model, calls: k, promptTokens: q, replyTokens: answer },
    // The control reuses the debate's round 0, so it adds one revision per critique turn.
    ...preset.agents
      .map((a) => ({ a, calls: debate.groups.find((g) => g.what === `${a.id}: critique rounds`)?.calls ?? 0 }))
      .filter(({ calls }) => calls > 0)
      .map(({ a, calls }) => ({ what: `baseline: ${a.id} self-correction`, model: a.model, calls, promptTokens: q + answer, replyTokens: answer })),
    ...(matches ? [{ what: 'baseline: self-correction of the match players', model: matches.model, calls: matches.calls, promptTokens: q + answer, replyTokens: answer }] : []),
    ...(parallel ? [{ what: 'baseline: parallel synthesis', model: synthesizerModel(preset), calls: 1, promptTokens: q + n * answer, replyTokens: answer }] : []),
  ];
  const rounds = preset.protocol.kind === 'debate' ? 1 + preset.protocol.maxRounds : 1;
  return { groups: [...debate.groups, ...baselines], notes: debate.notes, rounds };
}

const NO_SIZE = 'No size is known for ';

function noSizeNote(models: ReadonlySet<string>): string {
  return `${NO_SIZE}${[...models].join(', ')}: their calls are left out of the time.`;
}

function withTotals(base: Pick<DryRunEstimate, 'protocol' | 'groups' | 'notes'>, sizeOf: (model: string) => number | null, plan: SchedulePlan | undefined, rounds: number): DryRunEstimate {
  const { groups } = base;
  const notes = [...base.notes];
  const calls = groups.reduce((s, g) => s + g.calls, 0);
  const tokens = groups.reduce((s, g) => s + g.calls * (g.promptTokens + g.replyTokens), 0);
  let seconds: number | null = null;
  if (groups.length > 0) {
    seconds = 0;
    const unknown = new Set<string>();
    for (const g of groups) {
      const bytes = sizeOf(g.model);
      if (bytes === null || bytes <= 0) {
        unknown.add(g.model);
        continue;
      }
      const perToken = bytes / ASSUMED_BANDWIDTH_BYTES;
      // Calls to one model wait for each other unless the server has slots for them.
      const slots = Math.max(1, plan?.models.find((m) => m.model === g.model)?.slots ?? 1);
      seconds += (g.calls / slots) * perToken * (g.replyTokens + g.promptTokens / PREFILL_SPEEDUP);
    }
    if (plan && !plan.allResident) {
      const loads = new Set(groups.map((g) => g.model)).size * rounds;
      seconds += loads * 5;
      notes.push('The models do not all fit in VRAM together: about 5 s is counted for each model load per round.');
    }
    if (unknown.size > 0) notes.push(noSizeNote(unknown));
  }
  return { protocol: base.protocol, groups, calls, tokens, seconds, notes };
}
