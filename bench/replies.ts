import type { SimRequest } from '../src/sim/index.js';
import { agentOf, reply, roundOf, stageOf } from '../test/helpers/panel.js';

/** Agent answers of realistic length (about `words` tokens); judge and synthesis stay short, as with real models. */
export function benchReply(req: SimRequest, words: number): string {
  const agent = agentOf(req) ?? 'agent';
  const body = (tag: string): string => `${agent} ${tag}: ${Array.from({ length: words }, (_, i) => `w${i % 50}`).join(' ')}`;
  switch (stageOf(req)) {
    case 'opening':
      return reply.opening(agent, body('opening'));
    case 'critique':
      return reply.critique(agent, body(`round ${roundOf(req)}`));
    case 'judge':
      return reply.judge(0.1, req);
    case 'synthesis':
      return reply.synthesis();
    default:
      return 'ok';
  }
}
