import { formatNumber } from '../plural.js';
import { estimateTokens } from './context.js';

/**
 * Attached material (seed 002, "Passing Reference Excerpts"): a file short enough goes into
 * every agent's prompt whole; a long one is cut into sections, each agent gets the sections
 * that share most terms with its question, persona and focus, in document order, within its
 * share of the prompt. Pure: the runner decides the share and records what was kept.
 */

/** One attached file as read and recorded: the text every prompt quotes from. */
export interface Attachment {
  name: string;
  content: string;
  bytes: number;
  sha256: string;
}

/** What one call received of one attachment. */
export interface MaterialUse {
  name: string;
  mode: 'inline' | 'excerpt' | 'omitted';
  /** 1-based section numbers kept, in document order; empty when inline or omitted. */
  sections: number[];
  keptChars: number;
  totalChars: number;
}

/**
 * How much of the material a call may keep, from most to least: everything that fits,
 * the primary sections only (secondary ones dropped under budget pressure), or the single
 * best section cut to its key paragraph.
 */
export type MaterialKeep = 'all' | 'primary' | 'key';

export interface Section {
  attachment: number;
  /** 1-based within its attachment. */
  number: number;
  text: string;
}

/** Longest section kept as one piece; longer ones are cut at paragraph, then line boundaries. */
const MAX_SECTION_CHARS = 1400;

/** Markdown headings start sections; without headings, paragraphs do (grouped up to a size). */
export function splitSections(content: string, attachment = 0): Section[] {
  const text = content.replace(/\r\n?/g, '\n').trim();
  if (text === '') return [];
  const lines = text.split('\n');
  const blocks: string[] = [];
  const hasHeadings = lines.some((l) => /^#{1,6}\s/.test(l));
  if (hasHeadings) {
    let current: string[] = [];
    for (const line of lines) {
      if (/^#{1,6}\s/.test(line) && current.some((l) => l.trim() !== '')) {
        blocks.push(current.join('\n').trim());
        current = [];
      }
      current.push(line);
    }
    if (current.some((l) => l.trim() !== '')) blocks.push(current.join('\n').trim());
    // A heading with no text of its own (a title over the first section) joins the section after it.
    for (let i = blocks.length - 2; i >= 0; i--) {
      if (headingsOnly(blocks[i]!)) blocks.splice(i, 2, `${blocks[i]}\n\n${blocks[i + 1]}`);
    }
  } else {
    let group = '';
    for (const paragraph of text.split(/\n\s*\n/).map((p) => p.trim()).filter(Boolean)) {
      if (group && group.length + paragraph.length + 2 > MAX_SECTION_CHARS / 2) {
        blocks.push(group);
        group = paragraph;
      } else {
        group = group ? `${group}\n\n${paragraph}` : paragraph;
      }
    }
    if (group) blocks.push(group);
  }
  const pieces = blocks.flatMap((b) => cutLong(b, MAX_SECTION_CHARS));
  return pieces.map((p, i) => ({ attachment, number: i + 1, text: p }));
}

/** A heading line, or a paragraph of nothing but headings: a title, no content. */
const headingsOnly = (paragraph: string): boolean => paragraph.split('\n').every((l) => l.trim() === '' || /^#{1,6}\s/.test(l));

/**
 * The start of a section up to its first paragraph with content: the headings over it stay as
 * its context, but a key section is never a title alone.
 */
export function keyParagraph(section: string): string {
  const paragraphs = section.split(/\n\s*\n/);
  const first = paragraphs.findIndex((p) => p.trim() !== '' && !headingsOnly(p));
  return first < 0 ? section : paragraphs.slice(0, first + 1).join('\n\n');
}

function cutLong(block: string, max: number): string[] {
  if (block.length <= max) return [block];
  const out: string[] = [];
  let rest = block;
  while (rest.length > max) {
    const window = rest.slice(0, max);
    const at = Math.max(window.lastIndexOf('\n\n'), window.lastIndexOf('\n'), window.lastIndexOf('. ') + 1);
    const cut = at > max / 3 ? at : max;
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest) out.push(rest);
  return out;
}

const STOPWORDS = new Set(
  'about above after again against also because been before being below between both could does doing down during each from further have having here hers into itself just more most other ought ours same should some such than that their theirs them then there these they this those through under until very were what when where which while whom will with would your yours answer question should panel'.split(
    ' ',
  ),
);

/** Content words of a text: lower case, four letters or more, no common words. */
export function terms(text: string): Set<string> {
  const out = new Set<string>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}_-]{3,}/gu) ?? []) {
    if (!STOPWORDS.has(word)) out.add(word);
  }
  return out;
}

/** Distinct query terms a section contains, focus terms counting double; a mild preference for shorter sections. */
export function scoreSection(section: string, query: Set<string>, focus: Set<string>): number {
  const own = terms(section);
  let score = 0;
  for (const t of own) {
    if (focus.has(t)) score += 2;
    else if (query.has(t)) score += 1;
  }
  return score / Math.sqrt(Math.max(1, section.length / 400));
}

export interface MaterialRequest {
  question: string;
  persona: string | null | undefined;
  /** The call's own angle: its sub-question, its role, what it critiques. */
  focus: string;
  /** Tokens the material may take in this prompt, markers included. */
  allowanceTokens: number;
  keep: MaterialKeep;
}

export interface MaterialSection {
  /** The marked text to insert; empty when there is no material. */
  text: string;
  uses: MaterialUse[];
  /** Characters of secondary sections left out because of `keep` (budget pressure), for the record. */
  droppedForBudget: number;
}

/**
 * The material section of one prompt: every attachment whole when all of them fit (and
 * nothing asks for less), else ranked excerpts marked as such, in document order.
 */
export function materialFor(attachments: readonly Attachment[], req: MaterialRequest): MaterialSection {
  if (attachments.length === 0) return { text: '', uses: [], droppedForBudget: 0 };
  const allowanceChars = Math.max(0, Math.floor(req.allowanceTokens * 3.5));
  const framing = attachments.length * 120 + 200;
  const room = allowanceChars - framing;
  const total = attachments.reduce((s, a) => s + a.content.length, 0);
  if (req.keep === 'all' && total <= room) {
    const uses = attachments.map((a) => ({ name: a.name, mode: 'inline' as const, sections: [], keptChars: a.content.length, totalChars: a.content.length }));
    const blocks = attachments.map((a) => `[${a.name}, whole, ${formatNumber(a.content.length)} characters]\n${a.content.trim()}\n[end of ${a.name}]`);
    return { text: wrapSection(blocks), uses, droppedForBudget: 0 };
  }
  const sections = attachments.flatMap((a, i) => splitSections(a.content, i));
  const query = terms(`${req.question}\n${req.persona ?? ''}`);
  const focus = terms(req.focus);
  const ranked = sections
    .map((s, order) => ({ s, order, score: scoreSection(s.text, query, focus) }))
    .sort((x, y) => y.score - x.score || x.order - y.order);
  const cost = (s: Section): number => s.text.length + 40;
  // Primary: the best sections within half the room; secondary: the next ones up to the whole room.
  const chosen: { s: Section; order: number }[] = [];
  let used = 0;
  let dropped = 0;
  const limit = req.keep === 'all' ? room : Math.floor(room / 2);
  for (const r of ranked) {
    if (used + cost(r.s) <= limit) {
      chosen.push(r);
      used += cost(r.s);
    } else if (req.keep !== 'all' && used + cost(r.s) <= room) {
      dropped += r.s.text.length;
    }
    if (req.keep === 'key' && chosen.length === 1) break;
  }
  if (req.keep === 'key') {
    // Only the single best section, cut to its first paragraph when that is shorter.
    const best = chosen[0] ?? (ranked[0] && room > 200 ? { s: { ...ranked[0].s, text: ranked[0].s.text.slice(0, Math.floor(room / 2)) }, order: ranked[0].order } : undefined);
    chosen.length = 0;
    if (best) {
      const key = keyParagraph(best.s.text);
      chosen.push({ s: { ...best.s, text: key.length < best.s.text.length ? key : best.s.text }, order: best.order });
    }
    dropped = Math.max(0, sections.reduce((s, x) => s + x.text.length, 0) - (chosen[0]?.s.text.length ?? 0));
  }
  chosen.sort((x, y) => x.order - y.order);
  const uses: MaterialUse[] = [];
  const blocks: string[] = [];
  attachments.forEach((a, i) => {
    const mine = chosen.filter((c) => c.s.attachment === i).map((c) => c.s);
    const kept = mine.reduce((s, x) => s + x.text.length, 0);
    const numbers = mine.map((x) => x.number);
    uses.push({ name: a.name, mode: mine.length ? 'excerpt' : 'omitted', sections: numbers, keptChars: kept, totalChars: a.content.length });
    if (mine.length === 0) {
      blocks.push(`[${a.name}: no section kept for this prompt — 0 of ${formatNumber(a.content.length)} characters]`);
      return;
    }
    const of = sections.filter((s) => s.attachment === i).length;
    const header = `[Excerpt of ${a.name}: section${numbers.length === 1 ? '' : 's'} ${numbers.join(', ')} of ${of} — ${formatNumber(kept)} of ${formatNumber(a.content.length)} characters]`;
    blocks.push(`${header}\n${mine.map((s) => `(section ${s.number})\n${s.text}`).join('\n…\n')}\n[end of excerpt of ${a.name}]`);
  });
  return { text: wrapSection(blocks), uses, droppedForBudget: dropped };
}

function wrapSection(blocks: string[]): string {
  return [
    'Reference material attached to the question (read it; cite it by file name and section where it supports a point; it may be an excerpt chosen for your part):',
    '',
    ...blocks.flatMap((b) => [b, '']),
  ].join('\n').trimEnd();
}

/** The constraints block: stated whole in every agent prompt, never shortened. */
export function constraintsText(constraints: readonly string[]): string {
  if (constraints.length === 0) return '';
  return ['Constraints every answer must respect:', ...constraints.map((c) => `- ${c}`)].join('\n');
}

/**
 * What stands before every agent's prompt, material aside: the run's brief (the advisor's
 * classification, or the preset's own), then the user's constraints.
 */
export function standingText(constraints: readonly string[], brief: string | undefined): string {
  const framing = brief ? `How this question was framed before the panel started:\n${brief}` : '';
  return [framing, constraintsText(constraints)].filter((t) => t !== '').join('\n\n');
}

/** Tokens the whole material would take inline. */
export function materialTokens(attachments: readonly Attachment[]): number {
  return attachments.reduce((s, a) => s + estimateTokens(a.content) + 40, 0);
}

/** The record's short line for one call's material: `plan.md excerpt 3/9 sections, 3,100 of 18,000 chars`. */
export function describeUses(uses: readonly MaterialUse[]): string {
  return uses
    .map((u) =>
      u.mode === 'inline'
        ? `${u.name} whole (${formatNumber(u.totalChars)} chars)`
        : u.mode === 'omitted'
          ? `${u.name} left out`
          : `${u.name} excerpt, section${u.sections.length === 1 ? '' : 's'} ${u.sections.join(', ')} (${formatNumber(u.keptChars)} of ${formatNumber(u.totalChars)} chars)`,
    )
    .join('; ');
}
