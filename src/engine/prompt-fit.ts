import type { AgentSpec } from '../config/preset-schema.js';
import { InputError } from '../errors.js';
import { formatNumber } from '../plural.js';

/** What an agent's opening prompt is made of, in tokens, against the room its model has. */
export interface PromptParts {
  agent: Pick<AgentSpec, 'id' | 'model'>;
  /** Its persona, part of `opening`. */
  persona: number;
  /** The persona and the question, as sent. */
  opening: number;
  /** The constraints and the framing brief, stated in every prompt. */
  standing: number;
  /** What the attachments keep for themselves. */
  material: number;
  room: number;
  numCtx: number;
}

/** The refusal of a prompt that cannot fit, naming its largest part and the fix for that part. */
export function promptTooLong(p: PromptParts): InputError {
  const need = p.opening + p.standing + p.material;
  const n = formatNumber;
  const parts = [`its persona ${n(p.persona)}`, ...(p.standing > 0 ? [`constraints ${n(p.standing)}`] : []), ...(p.material > 0 ? [`attachments ${n(p.material)}`] : [])];
  const question = p.opening - p.persona;
  const largest = Math.max(p.persona, p.standing, p.material, question);
  const fix =
    largest === p.standing
      ? 'Shorten the constraints (--constraint, or `constraints` in the preset): they are stated whole in every prompt.'
      : largest === p.material
        ? 'Attach less, or give the model a larger num_ctx (options.num_ctx).'
        : largest === p.persona
          ? `Shorten the persona of ${p.agent.id} to a few paragraphs, or give ${p.agent.model} a larger num_ctx (options.num_ctx) if the model supports it.`
          : 'Shorten the question and attach long text with --attach, or give the model a larger num_ctx (options.num_ctx).';
  return new InputError(
    'PROMPT_TOO_LONG',
    `Agent ${p.agent.id}'s opening prompt needs about ${n(need)} tokens (${parts.join(', ')}), but ${p.agent.model} has room for ${n(Math.max(0, p.room))} at num_ctx ${p.numCtx}: the server would silently drop the start of it.`,
    { hint: fix },
  );
}
