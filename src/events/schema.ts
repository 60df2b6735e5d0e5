import { z } from 'zod';

/**
 * The lines of `--events`: one JSON object per line on stdout, each a versioned event of the
 * run as the recorder sees it. These types are the contract; docs/events.md is generated from
 * them (scripts/write-events-doc.ts) and a test checks every line of a whole run against them.
 * Model text is carried as plain JSON strings: a reader that shows it must make it inert itself.
 */
export const EVENTS_VERSION = 1;

const stage = z.string().describe('The stage of the call: opening, critique, judge, synthesis, vote, verdict, subanswer, …');
const round = z.number().int().min(0).describe('The round the call belongs to (0 is the opening round).');
const agentId = z.string().describe('The agent, or `judge` / `synthesizer` for those roles.');

/** Fields every line has, in this order. */
const common = {
  v: z.literal(EVENTS_VERSION).describe('The version of this schema; a change that breaks readers raises it.'),
  debateId: z.string().nullable().describe('The debate the event belongs to; null on a bench\'s closing `end`, which belongs to no one debate.'),
  seq: z.number().int().min(1).describe('1, 2, 3, … over the whole output, with no gaps.'),
  at: z.number().describe('When it happened, in milliseconds since 1970 (UTC).'),
};

function event<T extends string, S extends z.ZodRawShape>(type: T, description: string, shape: S) {
  return z.strictObject({ ...common, type: z.literal(type), ...shape }).describe(description);
}

export const planEvent = event('plan', 'The debate starts: its question, panel and schedule plan.', {
  question: z.string().describe('The question, as asked.'),
  preset: z.string().describe("The preset's name."),
  protocol: z.string().describe('The protocol run: debate, parallel, tournament, decompose, pipeline, oxford, delphi or auto.'),
  host: z.string().describe('The server the debate runs on (the first one, when a pool serves it).'),
  agents: z
    .array(
      z.strictObject({
        id: z.string(),
        model: z.string(),
        role: z.enum(['debater', 'judge', 'synthesizer']),
        persona: z.string().nullable(),
      }),
    )
    .describe('The panel, then the judge and the synthesizer.'),
  plan: z.unknown().describe('The schedule plan: slots per model, groups, num_ctx (as recorded with the debate).'),
  warnings: z.array(z.string()).describe('Warnings about the preset, as the terminal shows them.'),
});

export const roundEvent = event('round', 'A round starts.', { round });

export const callStartedEvent = event('call.started', 'A model call is sent (a repair or a quality retry is a new call with a higher attempt).', {
  stage,
  round,
  agentId,
  model: z.string(),
  attempt: z.number().int().min(0).describe('0 first; 1 a repair quoting the validation error; 2 a quality retry.'),
});

export const callDeltaEvent = event(
  'call.delta',
  'A call is streaming: at most one line per call every 100 ms, always before its `call.finished`.',
  {
    stage,
    round,
    agentId,
    tokens: z.number().int().min(0).describe('Tokens streamed so far, thinking included.'),
    thinking: z.boolean().describe('True while the model is thinking and has written none of its answer yet (also while its content is inside `<think>` tags, whose text is never sent).'),
    field: z.string().nullable().describe('The field of the reply being written (`position`, `updatedPosition`, `recommendation`, …); null before one starts.'),
    text: z.string().describe("That field's text so far, unescaped (replace, do not append); empty while thinking."),
  },
);

export const callFinishedEvent = event('call.finished', 'A call ended, with its tokens; as recorded.', {
  stage,
  round,
  agentId,
  model: z.string(),
  attempt: z.number().int().min(0),
  status: z.enum(['ok', 'invalid', 'error', 'aborted']).describe('ok; invalid (the reply broke the schema); error; aborted (Ctrl-C or a stop).'),
  error: z.string().nullable().describe('Why it failed, for invalid, error and aborted calls.'),
  promptTokens: z.number().int().nullable(),
  completionTokens: z.number().int().nullable(),
  thinkingTokens: z.number().int().nullable().describe('Tokens of thinking; null when the model did not think.'),
  durationMs: z.number().describe('From the request to the last byte.'),
});

export const qualityEvent = event('quality', "An agent's result was rated (docs/quality.md); the last rating of a result is the one that counts.", {
  stage,
  round,
  agentId,
  try: z.number().int().min(0).describe('0 for the first answer, 1 for the answer to its quality retry.'),
  score: z.number().int().min(0).max(100),
  action: z.string().describe('What the rating led to: accept, retry, or flag.'),
  reasons: z.array(z.string()),
});

export const answerEvent = event('answer', "An agent's turn of a round is settled: its position, or why it has none.", {
  round,
  agentId,
  status: z.enum(['ok', 'invalid', 'failed']),
  position: z.string().nullable().describe('The position the agent holds after this turn.'),
  confidence: z.number().min(0).max(1).nullable(),
  error: z.string().nullable(),
});

export const judgeEvent = event('judge', "The judge scored a round's agreement, and grouped the panel by stance.", {
  round,
  status: z.enum(['ok', 'failed']),
  convergence: z.number().min(0).max(1).nullable().describe('The mean of the three axes, 0 to 1; null when the judge failed.'),
  score: z
    .strictObject({ recommendation: z.number(), facts: z.number(), caveats: z.number() })
    .nullable()
    .describe('The three axes, each 0 to 1.'),
  stances: z
    .array(z.strictObject({ id: z.string(), summary: z.string(), agents: z.array(z.string()) }))
    .describe('The stances held this round and who holds each; empty when the judge gave none.'),
  error: z.string().nullable(),
});

export const stopEvent = event('stop', 'The debate decided to stop its rounds, and why.', {
  reason: z.string().describe('converged, max_rounds, budget, interrupted, …'),
  round,
  detail: z.string(),
});

export const synthesisEvent = event('synthesis', 'The synthesis ended: the attributed answer, or why it failed.', {
  status: z.enum(['ok', 'failed']),
  model: z.string().nullable(),
  recommendation: z.string().nullable().describe("The synthesis's recommendation; null when it failed."),
  synthesis: z.unknown().describe('The whole synthesis as recorded (recommendation, dissent, attribution, …), or null.'),
  error: z.string().nullable(),
});

export const budgetEvent = event('budget', 'The token budget cut material, skipped a call or stopped the protocol.', {
  kind: z.enum(['truncate', 'skip', 'stop']),
  stage: z.string().nullable(),
  round,
  agentId: z.string().nullable(),
  detail: z.string(),
  used: z.number(),
  limit: z.number(),
});

export const warningEvent = event('warning', 'Something the user should know that did not stop the run.', { message: z.string() });

export const stepEvent = event('step', "A protocol's own event (votes, tensions, a tournament's matches, a decomposition's parts, a reused turn), as the engine emits it.", {
  name: z.string().describe('The engine event it carries, e.g. `vote.cast`, `tension.mapped`, `protocol.step`.'),
  data: z.record(z.string(), z.unknown()).describe("That event's fields, as recorded."),
});

export const endEvent = event('end', 'The last line: how the command ended.', {
  status: z.string().describe('completed, unsynthesized, failed or interrupted for a debate; for a bench, completed or failed.'),
  exitCode: z.number().int().min(0).describe('The exit code the command returns.'),
  error: z.string().nullable().describe('The message the command printed on stderr when it failed.'),
});

/** Every event, in the order a run usually emits them. */
export const EVENT_SCHEMAS = [
  planEvent,
  roundEvent,
  callStartedEvent,
  callDeltaEvent,
  callFinishedEvent,
  qualityEvent,
  answerEvent,
  judgeEvent,
  stopEvent,
  synthesisEvent,
  budgetEvent,
  warningEvent,
  stepEvent,
  endEvent,
] as const;

export const conclaveEvent = z.discriminatedUnion('type', EVENT_SCHEMAS);
export type ConclaveEvent = z.infer<typeof conclaveEvent>;

type Bodies = { [E in ConclaveEvent as E['type']]: Omit<E, keyof typeof common | 'type'> };
/** An event's own fields, without the common ones the writer adds. */
export type EventBody<T extends ConclaveEvent['type']> = Bodies[T];
