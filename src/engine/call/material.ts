import { estimateMessagesTokens, estimateTokens } from '../../protocol/context.js';
import { type Attachment, describeUses, materialFor, materialTokens, type MaterialUse, standingText } from '../../protocol/material.js';
import type { ChatMessage } from '../../protocol/records.js';
import type { CallContext } from './context.js';
import type { CallRequest } from './request.js';

/** Most tokens of material one prompt carries: about two pages; longer material is excerpted. */
export const MATERIAL_SHARE_TOKENS = 2000;

/** Tokens set aside in each agent prompt for the material: all of it when short, else a fixed share. */
export function materialReserve(attachments: readonly Attachment[]): number {
  return attachments.length === 0 ? 0 : Math.min(MATERIAL_SHARE_TOKENS, materialTokens(attachments) + 80);
}

/** The prompt a call sends: its messages with the constraints and material inserted, what it read, and what the budget cut. */
export interface Prompt {
  messages: ChatMessage[];
  uses: MaterialUse[];
  cut: string | null;
}

/** The call's messages with the brief, the constraints and the material inserted before its prompt, and what was inserted. */
export function withMaterial(ctx: CallContext, req: CallRequest<unknown>): Prompt {
  const constraints = standingText(ctx.preset.constraints ?? [], ctx.preset.protocol.brief);
  if (!req.material || (ctx.attachments.length === 0 && constraints === '')) return { messages: req.messages, uses: [], cut: null };
  const persona = ctx.preset.agents.find((a) => a.id === req.agentId)?.persona;
  const pressure = ctx.tally.pressure();
  const left = ctx.promptBudget(req.model, req.options) - estimateMessagesTokens(req.messages) - estimateTokens(constraints) - 24;
  const material = materialFor(ctx.attachments, {
    question: ctx.question,
    persona,
    focus: req.material.focus,
    allowanceTokens: Math.min(materialReserve(ctx.attachments), left),
    keep: pressure.keep,
  });
  const cut =
    pressure.keep !== 'all' && ctx.attachments.length > 0
      ? `${pressure.keep === 'primary' ? 'secondary excerpts left out' : 'material cut to its one key section'} at ${Math.round(pressure.share * 100)}% of the budget; it read ${describeUses(material.uses)}`
      : null;
  const content = [constraints, material.text].filter((t) => t !== '').join('\n\n');
  return { messages: insertBeforePrompt(req.messages, content), uses: material.uses, cut };
}

/** A retry's messages with the brief and the user's constraints (never its material) inserted before its prompt. */
export function withConstraints(ctx: CallContext, messages: ChatMessage[]): ChatMessage[] {
  const constraints = standingText(ctx.preset.constraints ?? [], ctx.preset.protocol.brief);
  return constraints === '' ? messages : insertBeforePrompt(messages, constraints);
}

function insertBeforePrompt(messages: ChatMessage[], content: string): ChatMessage[] {
  const at = Math.max(0, messages.findIndex((m) => m.role === 'user'));
  return [...messages.slice(0, at), { role: 'user', content }, ...messages.slice(at)];
}
