import { z } from 'zod';
import type { AgentRole, AgentSpec } from '../config/preset-schema.js';
import type { ChatMessage } from './records.js';
import { boundedText, idEnum, memoSchema } from './grammar.js';
import { systemPrompt, type PeerView } from './prompts.js';
import { BLOCKING_CONFIDENCE, blockingFirst } from './phases.js';

/**
 * The review pipeline, pure parts: roles, the observation schemas sent as `format`, how
 * any reply the grammar allows becomes a clean list (ids, blank text, duplicates), the
 * downgrade rule, and the prompts for the plan, the observations, the reviews and the filter.
 * The engine, not the model, decides what stays blocking.
 */

/** Observations one reply may list at most; the grammar stops the model there. */
export const MAX_OBSERVATIONS = 8;

export { BLOCKING_CONFIDENCE, blockingFirst, PHASE_ROUND, type PipelinePhase } from './phases.js';

/** An agent's role in a pipeline; an agent without one reviews. */
export function roleOf(agent: Pick<AgentSpec, 'role'>): AgentRole {
  return agent.role ?? 'reviewer';
}

function observationShape() {
  return z.strictObject({
    id: boundedText(40).describe('A short id for this observation, such as R1.'),
    text: boundedText(400).describe('The observation, one point, stated plainly.'),
    confidence: z.number().int().min(0).max(100).describe('How sure you are, 0 to 100.'),
    blocking: z.boolean().describe('True when this must be fixed before going ahead.'),
    evidence: boundedText(300).describe('What in the material supports it: a quote, a line, a fact.'),
  });
}

/** What the lead, an analyst and a reviewer return: a summary and their observations. */
export const observationsSchema = z.strictObject({
  summary: boundedText(600).describe('Two or three sentences on the whole.'),
  observations: z.array(observationShape()).max(MAX_OBSERVATIONS),
});

const NO_SOURCE = 'none';

/** The filter's reduced list: each finding names the observations it merges (`sources`, as shown to it). */
export const findingsSchemaFor = memoSchema((refs: readonly string[]) =>
  z.strictObject({
    summary: boundedText(800).describe('The overall verdict in a few sentences.'),
    findings: z
      .array(
        z.strictObject({
          text: boundedText(400),
          confidence: z.number().int().min(0).max(100),
          blocking: z.boolean(),
          evidence: boundedText(300),
          sources: z.array(idEnum(refs, [NO_SOURCE])).max(MAX_OBSERVATIONS),
        }),
      )
      .max(MAX_OBSERVATIONS * 2),
  }),
);

/** The filter's one document. */
export const artifactSchema = z.strictObject({
  title: boundedText(120),
  document: z.string().describe('The document, in plain text or Markdown.'),
});

export type ObservationsReply = z.infer<typeof observationsSchema>;
export type FindingsReply = z.infer<ReturnType<typeof findingsSchemaFor>>;
export type ArtifactReply = z.infer<typeof artifactSchema>;

/** One observation as recorded: clean id, who raised it, and whether the engine downgraded it. */
export interface Observation {
  id: string;
  text: string;
  confidence: number;
  blocking: boolean;
  evidence: string;
  /** Set when it was sent as blocking below the threshold, or without evidence, and the engine made it non-blocking. */
  downgraded: boolean;
}

/** A finding of the final report: F1, F2, … in report order, with who raised it. */
export interface Finding extends Observation {
  raisedBy: string[];
  /** The observations it merges, as `agent/id`. */
  sources: string[];
}

const ID_CHARS = /[^A-Za-z0-9_.-]+/g;

/**
 * Any reply the schema allows, made usable: ids cleaned (odd characters dropped, cut to 24,
 * blank or repeated ones numbered), blank observations dropped, confidence brought to an
 * integer in 0–100. Says what it changed, as notes.
 */
export function cleanObservations(raw: ObservationsReply['observations'], prefix: string): { observations: Omit<Observation, 'downgraded'>[]; notes: string[] } {
  const notes: string[] = [];
  const used = new Set<string>();
  const observations: Omit<Observation, 'downgraded'>[] = [];
  for (const [i, o] of raw.entries()) {
    const text = o.text.trim();
    if (!text) {
      notes.push(`observation ${i + 1} has no text and was dropped`);
      continue;
    }
    let id = o.id.replace(ID_CHARS, '').slice(0, 24);
    if (!id || used.has(id)) {
      const base = id || prefix;
      let n = observations.length + 1;
      while (used.has(`${base}-${n}`)) n++;
      const fresh = `${base}-${n}`;
      notes.push(o.id.trim() ? `observation id ${JSON.stringify(o.id.slice(0, 40))} was repeated or unusable; renamed ${fresh}` : `observation ${i + 1} had no id; named ${fresh}`);
      id = fresh;
    }
    used.add(id);
    observations.push({ id, text, confidence: clampConfidence(o.confidence), blocking: o.blocking, evidence: o.evidence.trim() });
  }
  return { observations, notes };
}

export function clampConfidence(value: number): number {
  return Number.isFinite(value) ? Math.min(100, Math.max(0, Math.round(value))) : 0;
}

/**
 * The downgrade rule: blocking below the confidence threshold, or blocking with no evidence,
 * becomes non-blocking, marked as downgraded. An objection nobody can support cannot block.
 */
export function applyDowngrade<T extends Omit<Observation, 'downgraded'>>(o: T): T & { downgraded: boolean } {
  if (o.blocking && (o.confidence < BLOCKING_CONFIDENCE || o.evidence.trim() === '')) return { ...o, blocking: false, downgraded: true };
  return { ...o, downgraded: false };
}


/** An observation as one text block for a prompt: `[agent/id] BLOCKING, confidence 80: text / Evidence: …`. */
export function observationText(agentId: string, o: Observation): string {
  const why = o.confidence < BLOCKING_CONFIDENCE ? 'below the confidence threshold' : 'no evidence';
  const flag = o.blocking ? 'BLOCKING' : o.downgraded ? `not blocking (downgraded: ${why})` : 'not blocking';
  return `[${agentId}/${o.id}] ${flag}, confidence ${o.confidence}: ${o.text}${o.evidence ? `\n  Evidence: ${o.evidence}` : ''}`;
}

/** The list the filter reads: one agent's summary and observations. */
export function reviewText(summary: string, observations: Observation[], agentId: string): string {
  return [summary.trim(), ...observations.map((o) => observationText(agentId, o))].filter(Boolean).join('\n');
}

/**
 * The filter's findings made into the report: sources kept only where they name an observation
 * shown (unknown ones dropped with a note), who raised each taken from its sources (the filter
 * itself when none), blank ones dropped, then the downgrade rule, blocking first, ids F1, F2, ….
 */
export function reduceFindings(
  reply: FindingsReply,
  known: ReadonlyMap<string, { agentId: string; observation: Observation }>,
  filterId: string,
): { findings: Finding[]; downgraded: Finding[]; notes: string[] } {
  const notes: string[] = [];
  const kept: Omit<Finding, 'id' | 'downgraded'>[] = [];
  for (const [i, f] of reply.findings.entries()) {
    const text = f.text.trim();
    if (!text) {
      notes.push(`finding ${i + 1} has no text and was dropped`);
      continue;
    }
    const sources = [...new Set(f.sources)].filter((s) => known.has(s));
    // `none` is the grammar's only choice when no observation was shown: nothing to report.
    const unknown = f.sources.filter((s) => !known.has(s) && s !== NO_SOURCE);
    if (unknown.length) notes.push(`finding ${i + 1}: unknown sources ${[...new Set(unknown)].join(', ')} ignored`);
    const raisedBy = [...new Set(sources.map((s) => known.get(s)!.agentId))];
    const evidence = f.evidence.trim() || sources.map((s) => known.get(s)!.observation.evidence).filter(Boolean).join(' / ');
    kept.push({ text, confidence: clampConfidence(f.confidence), blocking: f.blocking, evidence, raisedBy: raisedBy.length ? raisedBy : [filterId], sources });
  }
  const judged = kept.map((f) => {
    const applied = applyDowngrade({ ...f, id: '' });
    // A finding built on a downgraded observation says so, whatever the filter wrote.
    const fromDowngraded = f.sources.some((s) => known.get(s)!.observation.downgraded);
    return { ...applied, downgraded: applied.downgraded || (fromDowngraded && !applied.blocking), byEngine: applied.downgraded };
  });
  const ordered = blockingFirst(judged).map(({ byEngine, ...f }, i) => ({ finding: { ...f, id: `F${i + 1}` }, byEngine }));
  return { findings: ordered.map((o) => o.finding), downgraded: ordered.filter((o) => o.byEngine).map((o) => o.finding), notes };
}


const OBSERVATION_REPLY = [
  'Reply with a JSON object: "summary" (two or three sentences on the whole), and "observations", a list (it may be empty) of',
  `{"id" (short, such as R1), "text" (one point), "confidence" (an integer from 0 to 100), "blocking" (true only if it must be settled before going ahead), "evidence" (what supports it: a quote, a line, a fact)}.`,
  `A blocking observation below confidence ${BLOCKING_CONFIDENCE} is recorded as not blocking, so mark blocking only what you are sure of.`,
].join('\n');

/** A role's request: its persona as the system prompt, the question, then its own lines. */
function roleMessages(question: string, persona: string | null | undefined, lines: string[]): ChatMessage[] {
  return [
    { role: 'system', content: systemPrompt(persona) },
    { role: 'user', content: [`Question: ${question}`, ...lines].join('\n') },
  ];
}

export function planMessages(question: string, persona: string | null | undefined, reviewers: number): ChatMessage[] {
  return roleMessages(question, persona, [
    '',
    `You lead this review. Write the plan ${reviewers} reviewer${reviewers === 1 ? '' : 's'} will check the material against: each observation is one check to make or one risk to look for, with how sure you are that it matters.`,
    OBSERVATION_REPLY,
  ]);
}

export function analystMessages(question: string, persona: string | null | undefined): ChatMessage[] {
  return roleMessages(question, persona, [
    '',
    'You are an analyst on this review. Add your own perspective: what the reviewers and the final report should keep in mind, each as one observation.',
    OBSERVATION_REPLY,
  ]);
}

/** `plan` is the lead's plan (fitted to num_ctx), or null when the pipeline has no lead or the lead failed. */
export function reviewMessages(question: string, persona: string | null | undefined, plan: PeerView | null): ChatMessage[] {
  const planLines = plan
    ? ['', `The plan from the lead (${plan.agentId})${plan.shortened ? ', shortened to fit' : ''}:`, plan.position, '', 'Review against this plan: check each point of it, and add what it missed.']
    : ['', 'Plan: (no plan provided). Review as a generic reviewer: correctness, risks, missing cases, clarity.'];
  return roleMessages(question, persona, [
    ...planLines,
    '',
    'You are a reviewer. Every observation needs evidence from the material or the question; leave out what you cannot support.',
    OBSERVATION_REPLY,
  ]);
}

/** The filter reads every review and the analysts' observations (each fitted to num_ctx). */
export function filterMessages(
  question: string,
  persona: string | null | undefined,
  mode: 'list' | 'artifact',
  reviews: PeerView[],
  perspectives: PeerView[],
  gaps: string[],
  sections: readonly string[] = [],
): ChatMessage[] {
  const block = (views: PeerView[]): string[] => views.map((p) => `[${p.agentId}]${p.shortened ? ' (shortened to fit)' : ''}\n${p.position}`);
  const ask =
    mode === 'list'
      ? [
          'Reduce these observations to one deduplicated list of findings: merge observations that make the same point, drop those that are false or unsupported, keep dissent that has evidence.',
          'Reply with a JSON object: "summary" (the overall verdict in a few sentences), and "findings", a list of {"text", "confidence" (an integer from 0 to 100), "blocking" (true or false), "evidence", "sources" (the ids in brackets, such as alice/R1, of the observations it merges)}.',
          `A blocking finding below confidence ${BLOCKING_CONFIDENCE} is recorded as not blocking. Findings are numbered by the engine.`,
        ]
      : [
          'Write one document from these reviews: the verdict first, then what must be fixed before going ahead, then the other points, naming who raised each and the evidence.',
          'Reply with a JSON object: "title" (a short title) and "document" (the document, in plain text or Markdown).',
        ];
  return roleMessages(question, persona, [
    '',
    'You are the filter of this review: you have no veto, you report. Here is every review:',
    '',
    ...(reviews.length ? block(reviews) : ['(no usable review)']),
    ...(perspectives.length ? ['', 'Observations from the analysts:', '', ...block(perspectives)] : []),
    ...(gaps.length ? ['', 'Without a usable reply:', ...gaps.map((g) => `- ${g}`)] : []),
    ...sections.flatMap((x) => ['', x]),
    '',
    ...ask,
  ]);
}
