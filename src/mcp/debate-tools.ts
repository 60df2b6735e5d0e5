import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { prepareRun } from '../cli/run-debate-cli.js';
import { InputError } from '../errors.js';
import type { DebateStatus } from '../engine/events.js';
import { debateDocument } from '../render/document.js';
import { debateListDocument } from '../render/list-document.js';
import { inert, inertLine, jsonText } from '../render/inert.js';
import type { StoredDebate } from '../store/store.js';
import { cardBlock, endNote, guarded, jsonBlock, keyParts, quoted, structuredResult, UNTRUSTED } from './results.js';
import { listOutput, showOutput, startOutput, stopOutput, waitOutput } from './output-schemas.js';
import type { RunProgress } from './runs.js';
import type { McpContext } from './context.js';
import { clipLongTexts, SHOW_TEXT_LIMIT } from './clip.js';
import { formatNumber, plural } from '../plural.js';

/** The longest one `conclave_wait` may wait. */
export const MAX_WAIT_SECONDS = 600;
/** Below the 60 s a client commonly allows a request, unless it resets its timeout on progress. */
const DEFAULT_WAIT_SECONDS = 50;
/** How often a debate run by another process is read again from the record. */
const POLL_MS = 1000;

const STATUSES = ['running', 'completed', 'unsynthesized', 'failed', 'interrupted'] as const;

/** conclave_start, conclave_wait, conclave_stop, conclave_show and conclave_list. */
export function registerDebateTools(server: McpServer, ctx: McpContext): void {
  server.registerTool(
    'conclave_start',
    {
      title: 'Start a Conclave debate',
      description:
        'Start a debate between local Ollama models on a question, with a preset (see conclave_presets). Returns the debate id at once; the debate goes on in the server. ' +
        'Then call conclave_wait with the id until it has ended. Attachments are text files every agent reads (paths on the server machine; relative ones resolve against the server\'s working directory), only under the folders the server was started with (`--allow-dir`; none by default), never hidden files or keys. ' +
        'Constraints are stated in every agent prompt. tokenBudget bounds the prompt plus reply tokens of the whole run (from 1000).',
      inputSchema: {
        question: z.string().describe('The question to debate, in full'),
        preset: z.string().describe('A built-in preset name (conclave_presets lists them) or the path of a YAML/JSON preset file'),
        attach: z.array(z.string()).optional().describe('Paths of UTF-8 text files (1 MiB at most each) that every agent reads'),
        constraints: z.array(z.string()).optional().describe('Constraints stated in every agent prompt, never shortened'),
        tokenBudget: z.number().int().min(1000).optional().describe('Prompt plus reply tokens for the whole run, from 1000'),
      },
      outputSchema: startOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    async (args, extra) =>
      guarded(async () => {
        if (args.question.trim() === '-') {
          throw new InputError('EMPTY_QUESTION', 'The question is `-`, which on the command line means standard input; a tool call has none.', { hint: 'Pass the question itself in `question`.' });
        }
        const prepared = await prepareRun(
          {
            question: args.question,
            preset: args.preset,
            attach: args.attach ?? [],
            constraint: args.constraints ?? [],
            ...(args.tokenBudget === undefined ? {} : { 'token-budget': args.tokenBudget }),
            ...(ctx.host === undefined ? {} : { host: ctx.host }),
            ...(ctx.hosts === undefined ? {} : { hosts: ctx.hosts }),
            'trust-preset-hosts': ctx.trustPresetHosts,
          },
          ctx.io,
          { chooser: 'mcp', allowDirs: ctx.allowDirs, consent: '`conclave mcp --trust-preset-hosts`' },
        );
        for (const line of prepared.header) ctx.log(line);
        // A call the client cancelled starts nothing; one cancelled while starting stops its debate (the client never learns its id).
        if (extra.signal.aborted) throw cancelledStart();
        const id = await ctx.runs.start(prepared, extra.signal);
        if (extra.signal.aborted) throw cancelledStart();
        return structuredResult(
          { id, status: 'running' },
          [`Started debate ${id}.`, ...prepared.header, `Call conclave_wait with id "${id}" to follow it; it reports progress while the debate runs and the result once it has ended.`].join('\n'),
          jsonText({ id, status: 'running' }),
        );
      }),
  );

  server.registerTool(
    'conclave_wait',
    {
      title: 'Wait for a Conclave debate',
      description:
        `Wait up to maxSeconds (at most ${MAX_WAIT_SECONDS}, default ${DEFAULT_WAIT_SECONDS}) for a debate to end. While it runs, returns its status and progress (round, stage, calls done, last judge score); call again to keep waiting. ` +
        'Once it has ended, returns its status, the card (recommendation, confidence, minority positions) and the key parts of its JSON document. ' +
        `Sends notifications/progress while waiting when the request carries a progressToken. ${UNTRUSTED}`,
      inputSchema: {
        id: z.string().describe('The debate id (or a unique prefix of it)'),
        maxSeconds: z.number().min(0).max(MAX_WAIT_SECONDS).optional().describe(`Seconds to wait at most, 0 to ${MAX_WAIT_SECONDS}; default ${DEFAULT_WAIT_SECONDS}`),
      },
      outputSchema: waitOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (args, extra) =>
      guarded(async () => {
        const id = ctx.runs.get(args.id) ? args.id : ctx.store.resolveId(args.id);
        const token = extra._meta?.progressToken;
        let lastSent = -1;
        const report = (p: RunProgress): void => {
          if (token === undefined || p.step <= lastSent) return;
          lastSent = p.step;
          extra
            .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p.step, message: progressLine(p) } })
            .catch((err: unknown) => ctx.log(`could not send progress: ${(err as Error).message}`));
        };
        const ms = (args.maxSeconds ?? DEFAULT_WAIT_SECONDS) * 1000;
        const run = ctx.runs.get(id);
        if (run) {
          await waitForRun(run, ms, extra.signal, report);
          if (run.end === null) return runningResult(id, run.progress);
          const stored = ctx.store.getDebate(id);
          return endedResult(stored, run.end.error ? `${run.end.error.message}${run.end.error.hint ? `\nHint: ${run.end.error.hint}` : ''}` : stored.error);
        }
        const stored = await pollStored(ctx, id, ms, extra.signal, report);
        if (stored.status === 'running') return runningResult(id, storedProgress(stored), 'It runs in another process on the same database.');
        return endedResult(stored, stored.error);
      }),
  );

  server.registerTool(
    'conclave_stop',
    {
      title: 'Stop a Conclave debate',
      description:
        'Stop a debate this server started and that is still running, as Ctrl-C stops `conclave run`: the calls in flight are cancelled, everything already recorded is kept and sealed, and the debate is marked interrupted. ' +
        '`conclave resume ID` goes on with it later from its last complete round. A debate that has already ended is left as it is.',
      inputSchema: { id: z.string().describe('The debate id (or a unique prefix of it)') },
      outputSchema: stopOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (args) =>
      guarded(async () => {
        const id = ctx.runs.get(args.id) ? args.id : ctx.store.resolveId(args.id);
        const stopped = await ctx.runs.stop(id, 'the MCP client stopped it with conclave_stop');
        const stored = ctx.store.getDebate(id);
        if (!stopped && stored.status === 'running' && !ctx.runs.get(id)) {
          throw new InputError('DEBATE_NOT_HERE', `Debate ${id} is running in another process (pid ${stored.pid} on ${inertLine(stored.hostname)}), not in this server: conclave_stop stops only the debates this server started.`, {
            hint: 'Stop it where it runs: Ctrl-C in the terminal of its `conclave run`, or conclave_stop on the MCP server that started it.',
          });
        }
        const said = stopped
          ? `Stopped debate ${id}: ${stored.status}. Everything recorded is kept; \`conclave resume ${id}\` goes on with it from its last complete round.`
          : `Debate ${id} had already ended (${stored.status}): nothing was stopped.`;
        return structuredResult({ id, status: stored.status, stopped }, said, jsonText({ id, status: stored.status, stopped }));
      }),
  );

  server.registerTool(
    'conclave_show',
    {
      title: 'Show a stored Conclave debate',
      description: `Return a stored debate: its card and its whole JSON document (every turn, judge score, call and the synthesis; format in docs/record.md). A text longer than ${formatNumber(SHOW_TEXT_LIMIT)} characters (a runaway reply) is cut there and marked, unless \`full\` is true. ${UNTRUSTED}`,
      inputSchema: {
        id: z.string().describe('The debate id (or a unique prefix of it)'),
        full: z.boolean().optional().describe(`Every text whole, however long; by default a text over ${formatNumber(SHOW_TEXT_LIMIT)} characters is cut there and marked`),
      },
      outputSchema: showOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (args) =>
      guarded(async () => {
        const stored = ctx.store.getDebate(ctx.store.resolveId(args.id));
        const whole = debateDocument(stored);
        const clipped = args.full === true ? { value: whole, texts: 0, characters: 0 } : clipLongTexts(whole, SHOW_TEXT_LIMIT, 'call conclave_show with full: true, or run `conclave show ID --json`, for the whole text');
        const document = clipped.value;
        const cut = clipped.texts === 0 ? '' : ` ${plural(clipped.texts, 'text')} longer than ${formatNumber(SHOW_TEXT_LIMIT)} characters ${clipped.texts === 1 ? 'is' : 'are'} cut there (${formatNumber(clipped.characters)} characters left off, each cut marked); \`full: true\` returns them whole.`;
        return structuredResult(
          { id: stored.id, status: stored.status, document },
          `Debate ${stored.id}: ${stored.status}. The card, then the ${clipped.texts === 0 ? 'whole ' : ''}JSON document (format conclave.debate).${cut}`,
          cardBlock(stored),
          jsonBlock(`the JSON document of debate ${stored.id}, with every reply of the panel`, document),
        );
      }),
  );

  server.registerTool(
    'conclave_list',
    {
      title: 'List Conclave debates',
      description: 'List stored debates, newest first: id, question, preset, status, rounds, final judge score, calls. Filter by status or preset name.',
      inputSchema: {
        status: z.enum(STATUSES).optional().describe('Only debates with this status'),
        preset: z.string().optional().describe('Only debates run with the preset of this name'),
        limit: z.number().int().min(1).max(500).optional().describe('How many at most; default 20'),
      },
      outputSchema: listOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (args) =>
      guarded(async () => {
        const limit = args.limit ?? 20;
        const status = args.status as DebateStatus | undefined;
        // The record has no index by preset: filter the list, which holds only one row per debate.
        const all = debateListDocument(ctx.store, { ...(status ? { status } : {}), ...(args.preset ? {} : { limit }) });
        const rows = (args.preset ? all.filter((d) => d.presetName === args.preset) : all).slice(0, limit);
        const entries = rows.map((d) => ({
          id: d.id,
          createdAt: new Date(d.createdAt).toISOString(),
          status: d.status,
          exitReason: d.exitReason,
          preset: d.presetName,
          question: d.question,
          roundsCompleted: d.roundsCompleted,
          finalConvergence: d.finalConvergence,
          agents: d.agentCount,
          calls: d.callCount,
          flaggedForReview: d.flaggedForReview,
        }));
        // The limit is not the total: when it cut the list, count every debate that matched.
        const matched = (list: { presetName: string }[]): number => (args.preset ? list.filter((d) => d.presetName === args.preset).length : list.length);
        const total = rows.length < limit ? rows.length : matched(ctx.store.listDebates({ ...(status ? { status } : {}), limit: Number.MAX_SAFE_INTEGER }));
        const shown = total > entries.length ? `${entries.length} of ${total} debates (the newest; raise limit for more)` : `${entries.length} debate${entries.length === 1 ? '' : 's'}`;
        return structuredResult({ debates: entries, total, database: ctx.store.path }, `${shown} in ${ctx.store.path}, newest first.`, jsonText(entries, 2));
      }),
  );
}

function progressLine(p: RunProgress): string {
  const parts = [p.round === null ? 'starting' : `round ${p.round}${p.stage ? ` (${p.stage})` : ''}`, `${p.callsDone} call${p.callsDone === 1 ? '' : 's'} done`];
  if (p.lastJudgeScore !== null) parts.push(`last judge score ${p.lastJudgeScore.toFixed(2)} (round ${p.lastJudgedRound})`);
  // The first words of what a model is writing: its own text, made inert and quoted as such.
  if (p.writing) parts.push(`${inertLine(p.writing.agentId)} is writing (${p.writing.stage}): "${inertLine(p.writing.words)}…"`);
  return parts.join(', ');
}

function runningResult(id: string, p: RunProgress, note?: string): CallToolResult {
  const progress = { round: p.round, stage: p.stage, callsDone: p.callsDone, lastJudgeScore: p.lastJudgeScore, lastJudgedRound: p.lastJudgedRound };
  return structuredResult(
    { id, status: 'running', ended: false, progress },
    [`Debate ${id} is still running: ${progressLine(p)}.`, ...(note ? [note] : []), `Call conclave_wait with id "${id}" again to go on waiting.`].join('\n'),
    jsonText({ id, status: 'running', round: p.round, stage: p.stage, callsDone: p.callsDone, lastJudgeScore: p.lastJudgeScore, lastJudgedRound: p.lastJudgedRound }, 2),
  );
}

function endedResult(d: StoredDebate, reason: string | null): CallToolResult {
  const summary = keyParts(d);
  return structuredResult(
    { id: d.id, status: d.status, ended: true, reason, debate: summary },
    endNote(d),
    // The reason can quote what a model or a server sent back.
    ...(reason ? [quoted(`why debate ${d.id} ended as it did, as Conclave recorded it (it can quote replies of models and servers)`, inert(reason))] : []),
    cardBlock(d),
    jsonBlock(`the key parts of the JSON document of debate ${d.id}`, summary),
  );
}

/** Resolves when the run ends, the time is up or the request is cancelled, reporting each change. */
function waitForRun(run: NonNullable<ReturnType<McpContext['runs']['get']>>, ms: number, signal: AbortSignal, report: (p: RunProgress) => void): Promise<void> {
  if (run.end !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      run.watchers.delete(watcher);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const watcher = (): void => {
      if (run.end !== null) done();
      else report(run.progress);
    };
    const timer = setTimeout(done, ms);
    run.watchers.add(watcher);
    signal.addEventListener('abort', done);
    report(run.progress);
  });
}

/** A debate another process runs: read from the record until it ends, the time is up or the request is cancelled. */
async function pollStored(ctx: McpContext, id: string, ms: number, signal: AbortSignal, report: (p: RunProgress) => void): Promise<StoredDebate> {
  const deadline = Date.now() + ms;
  for (;;) {
    const stored = ctx.store.getDebate(id);
    if (stored.status !== 'running' || signal.aborted || Date.now() >= deadline) return stored;
    report(storedProgress(stored));
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
}

function storedProgress(d: StoredDebate): RunProgress {
  const last = d.calls.at(-1);
  const judged = d.rounds.filter((r) => r.convergence !== null).at(-1);
  return {
    step: d.calls.length + d.rounds.length,
    round: last?.round ?? null,
    stage: last?.stage ?? null,
    callsDone: d.calls.length,
    lastJudgeScore: judged?.convergence ?? null,
    lastJudgedRound: judged?.round ?? null,
    writing: null,
  };
}

function cancelledStart(): InputError {
  return new InputError('CANCELLED', 'conclave_start was cancelled by the client: no debate runs for it.', { hint: 'Call conclave_start again to start one.' });
}
