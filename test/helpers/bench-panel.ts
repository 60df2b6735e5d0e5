import type { SuiteItem } from '../../src/bench/suite.js';
import type { SimReply, SimRequest } from '../../src/sim/index.js';
import { agentOf, reply, roundOf } from './panel.js';

/** What a scripted bench panel says about one item. `null` is a reply with no readable answer. */
export interface ItemScript {
  /** Per agent, its answer after each round (0, 1, …); the last one repeats. */
  rounds: Record<string, (string | null)[]>;
  /** Judge convergence per round; the last one repeats. */
  judge: number[];
  /** The synthesizer's final answer (null: a recommendation with no answer in it). */
  synth: string | null;
  minority?: { agent: string; round: number }[];
  /** Per agent, the stand-alone single answer; default: its round-0 answer. */
  single?: Record<string, string | null>;
  /** Per agent, a raw reply to the single answer call instead of JSON (e.g. prose). */
  singleRaw?: Record<string, string>;
  /** Per agent, what the single answer's repair request gets; default: the same as the first reply. */
  singleRepair?: Record<string, string | null>;
  /** Agents whose opening states its answer in the reasoning instead of the position. */
  answerInReasoning?: string[];
  /** Cluster vote: YES for a position whose answer is listed; default YES when it matches the voter's own. */
  voteYes?: string[];
  /** Self-consistency samples in order (sample j is asked of agent j mod n). */
  sc?: (string | null)[];
  /** Per agent, its answer after each revision of the self-correction control (1, 2, …); default: its round-0 answer. */
  revise?: Record<string, (string | null)[]>;
}

type BenchStage = 'opening' | 'critique' | 'judge' | 'synthesis' | 'answer' | 'vote' | 'other';

function stageOf(req: SimRequest): BenchStage {
  const props = (req.format as { properties?: Record<string, unknown> } | null)?.properties ?? {};
  if ('position' in props) return 'opening';
  if ('updatedPosition' in props) return 'critique';
  if ('caveats' in props) return 'judge';
  if ('triggersToRevisit' in props) return 'synthesis';
  if ('answer' in props) return 'answer';
  if ('vote' in props) return 'vote';
  return 'other';
}

const position = (answer: string | null): string => (answer === null ? 'I am not sure how to work this out.' : `I worked it through. Final answer: ${answer}`);
const pick = <T>(list: readonly T[], i: number): T => list[Math.min(i, list.length - 1)]!;

/**
 * A simulator responder that plays a bench panel item by item: it finds the
 * item by its question text, the agent by its persona (`You are agent X.`),
 * and answers as the script says, from the request alone. Records every request it saw.
 */
export function benchResponder(items: SuiteItem[], scripts: Record<string, ItemScript>, agentIds: string[]) {
  const seen: SimRequest[] = [];
  const itemOf = (req: SimRequest): SuiteItem => {
    const text = req.messages.map((m) => m.content).join('\n');
    const item = items.find((i) => text.includes(i.question));
    if (!item) throw new Error(`no scripted item in: ${text.slice(0, 200)}`);
    return item;
  };
  const respond = (req: SimRequest): SimReply => {
    seen.push(req);
    const item = itemOf(req);
    const script = scripts[item.id]!;
    const agent = agentOf(req) ?? '';
    switch (stageOf(req)) {
      case 'opening': {
        const answer = pick(script.rounds[agent]!, 0);
        if (script.answerInReasoning?.includes(agent)) {
          return JSON.stringify({ position: 'The sum works out as shown below.', reasoning: position(answer), confidence: 70 });
        }
        return JSON.stringify({ position: position(answer), reasoning: 'step by step', confidence: 70 });
      }
      case 'critique':
        return JSON.stringify({ agreements: [], disagreements: [], updatedPosition: position(pick(script.rounds[agent]!, roundOf(req))), confidence: 70 });
      case 'judge': {
        const round = Number(/Positions after round (\d+)/.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? 0);
        const v = pick(script.judge, round);
        return reply.judge(v, req);
      }
      case 'synthesis': {
        // A minority is placed in a round the schema allows: a synthesis of round 0 alone allows round 0 only.
        const lastRound = (req.format as { properties: { minorityPositions: { items: { properties: { round: { maximum: number } } } } } }).properties.minorityPositions.items.properties.round.maximum;
        return JSON.stringify({
          recommendation: script.synth === null ? 'The panel reached no agreement on a figure.' : `The panel settles on ${script.synth}. Final answer: ${script.synth}`,
          triggersToRevisit: [],
          confidence: { level: 'medium', converged: 2 },
          restsOn: [],
          minorityPositions: (script.minority ?? []).map((m) => ({ ...m, round: Math.min(m.round, lastRound), argument: 'a different figure', whyItMatters: 'it could be right' })),
          failedAgents: [],
        });
      }
      case 'answer': {
        // The request says which answer it is: a self-consistency sample carries seed 1 + j, a single answer none.
        const seed = req.options.seed;
        const sample = typeof seed === 'number' ? seed - 1 : -1;
        const repair = req.messages.some((m) => m.role === 'assistant');
        const single = script.single?.[agent] !== undefined ? script.single[agent]! : pick(script.rounds[agent]!, 0);
        const revision = Number(/This is revision (\d+)\./.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? 0);
        let answer: string | null;
        if (revision > 0) {
          answer = script.revise?.[agent] ? pick(script.revise[agent], revision - 1) : pick(script.rounds[agent]!, 0);
        } else if (sample >= 0) {
          answer = pick(script.sc ?? [null], sample);
        } else if (repair) {
          answer = script.singleRepair?.[agent] !== undefined ? script.singleRepair[agent]! : single;
        } else {
          const raw = script.singleRaw?.[agent];
          if (raw !== undefined) return raw;
          answer = single;
        }
        // What the schema sent allows: a JSON number for a number item.
        return answer === null ? 'Hmm, no idea.' : JSON.stringify({ reasoning: 'worked it out', answer: item.kind === 'number' && Number.isFinite(Number(answer)) ? Number(answer) : answer });
      }
      case 'vote': {
        const prompt = req.messages.at(-1)?.content ?? '';
        const answerIn = (text: string): string | null => /Final answer: (\S+)/.exec(text)?.[1] ?? null;
        const artifact = answerIn(/<<<POSITION\n([\s\S]*?)\nPOSITION>>>/.exec(prompt)?.[1] ?? '');
        const own = answerIn(/Your own final position, for reference:\n(.*)/.exec(prompt)?.[1] ?? '');
        const yes = artifact !== null && (script.voteYes ? script.voteYes.includes(artifact) : artifact === own);
        return JSON.stringify({ reason: 'checked the figure', vote: yes ? 'YES' : 'NO' });
      }
      default:
        return 'ok';
    }
  };
  return { respond, seen };
}
