import type { SimReply, SimRequest } from '../../src/sim/index.js';
import { agentOf, reply, scriptedResponder } from './panel.js';

/**
 * A scripted panel for the tension stage. Every agent states two claims,
 * `<id> claim 1` and `<id> claim 2`, numbered in panel order: with agents
 * a, b, c, d that is a: C1 C2, b: C3 C4, c: C5 C6, d: C7 C8.
 */

export type TensionStage = 'claims' | 'clash' | 'targeted' | 'map';

export function tensionStageOf(req: SimRequest): TensionStage | null {
  const props = (req.format as { properties?: Record<string, unknown> } | null)?.properties ?? {};
  if ('claims' in props) return 'claims';
  if ('clashes' in props) return 'clash';
  if ('stance' in props) return 'targeted';
  if ('majorFindings' in props) return 'map';
  return null;
}

export const userText = (req: SimRequest): string => req.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';

export interface ClashSpec {
  a: string;
  b: string;
  type: 'factual' | 'interpretive' | 'emphasis';
  severity: number;
  loadBearing?: boolean;
}

/** A clash model that reports the scripted clashes whose claims and pair the request lists. */
export function clashReply(req: SimRequest, specs: ClashSpec[]): string {
  const text = userText(req);
  const listed = new Map([...text.matchAll(/^\[(C\d+)\] (\S+):/gm)].map((m) => [m[1]!, m[2]!]));
  const pairs = new Set((/only these: (.*)\.$/m.exec(text)?.[1] ?? '').split('; ').map((p) => p.split(' with ').sort().join('|')));
  const clashes = specs
    .filter((s) => listed.has(s.a) && listed.has(s.b) && pairs.has([listed.get(s.a)!, listed.get(s.b)!].sort().join('|')))
    .map((s) => ({ claimA: s.a, claimB: s.b, type: s.type, severity: s.severity, loadBearing: s.loadBearing ?? true, resolvable: true, recommendation: `weigh ${s.a} against ${s.b}` }));
  return JSON.stringify({ clashes });
}

export function mapReply(req: SimRequest, confidence = 60): string {
  const ids = (/^Panelists: (.*)$/m.exec(userText(req))?.[1] ?? '').split(', ');
  return JSON.stringify({
    headline: 'The panel agrees on A but splits on its cost.',
    // One zone every panelist supports, naming their first claims, so the map covers each agent's main point.
    consensus: [{ claim: 'Each first claim holds: A is worth doing', supportingAgents: ids, confidence: 80, loadBearing: true }],
    majorFindings: ['first finding', 'second finding', 'third finding'],
    openQuestions: ['what does A cost?'],
    confidence: ids.map((agent) => ({ agent, confidence })),
  });
}

export interface TensionScript {
  clashes?: ClashSpec[];
  stances?: Record<string, 'maintain' | 'narrow' | 'concede'>;
  map?: (req: SimRequest) => SimReply;
  opening?: (agent: string) => string;
  judge?: number[];
  clashOverride?: (req: SimRequest, attempt: number) => SimReply | undefined;
  /** Clashes an agent concedes in its critique of a round, e.g. `{ b: { 1: ['T1'] } }`. */
  concessions?: Record<string, Record<number, string[]>>;
  /** Clashes an agent names twice in its critique of a round, maintained then conceded (the grammar allows the repeat). */
  repeats?: Record<string, Record<number, string[]>>;
}

export function tensionResponder(script: TensionScript) {
  let clashCalls = 0;
  return scriptedResponder(script.judge ?? [0.95], (req) => {
    const stage = tensionStageOf(req);
    const agent = agentOf(req);
    if (stage === null && script.opening && agent && 'position' in ((req.format as { properties?: object })?.properties ?? {})) {
      return reply.opening(agent, script.opening(agent));
    }
    const props = (req.format as { properties?: object } | null)?.properties ?? {};
    if (stage === null && agent && 'clashUpdates' in props) {
      const round = Number(/critique round (\d+)/.exec(userText(req))?.[1] ?? 0);
      const listed = [...userText(req).matchAll(/^- (T\d+) \(/gm)].map((m) => m[1]!);
      const conceded = script.concessions?.[agent]?.[round] ?? [];
      const base = JSON.parse(reply.critique(agent) as string) as object;
      const repeated = script.repeats?.[agent]?.[round] ?? [];
      const updates = listed.flatMap((tension) => [
        { tension, stance: conceded.includes(tension) ? 'concede' : 'maintain' },
        ...(repeated.includes(tension) ? [{ tension, stance: 'concede' }] : []),
      ]);
      // The schema allows as many entries as clashes listed: a repeat takes another clash's place.
      return JSON.stringify({ ...base, clashUpdates: updates.slice(0, listed.length) });
    }
    switch (stage) {
      case 'claims': {
        const id = /^Panelist: (\S+)$/m.exec(userText(req))?.[1] ?? '?';
        return JSON.stringify({ claims: [`${id} claim 1`, `${id} claim 2`] });
      }
      case 'clash':
        return script.clashOverride?.(req, clashCalls++) ?? clashReply(req, script.clashes ?? []);
      case 'targeted':
        return JSON.stringify({ response: `${agent} engages`, stance: script.stances?.[agent ?? ''] ?? 'maintain', revisedClaim: `${agent} revised`, confidence: 50 });
      case 'map':
        return script.map?.(req) ?? mapReply(req);
      default:
        return undefined;
    }
  });
}

