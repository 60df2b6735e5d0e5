import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import { MAX_ATTACHMENT_BYTES, questionFromBytes, readAttachments, readMcpAttachments, readPresetAttachments, readQuestionFile } from '../config/attachments.js';
import { mcpPresetGuard } from '../config/mcp-preset.js';
import { checkDestinations, type Destinations, destinationUrls } from '../config/trust.js';
import { loadPreset, parsePreset } from '../config/load-preset.js';
import type { HostEntry, Preset } from '../config/preset-schema.js';
import { rmSync, writeFileSync } from 'node:fs';
import { DebateFailedError, InputError, InterruptedError, StoreError } from '../errors.js';
import type { DebateEvent, DebateListener } from '../engine/events.js';
import { lockWaitFromEnv, recorder, type ResumePoint } from '../engine/recorder.js';
import { type DebateResult, newDebateId, type RunDebateOptions, runDebate } from '../engine/run-debate.js';
import type { Store } from '../store/store.js';
import { resolveHost } from '../ollama/host.js';
import { type HostArgs, singleHost } from './host-args.js';
import { renderCard } from '../render/card.js';
import { debateDocument } from '../render/document.js';
import { liveRenderer } from '../render/live.js';
import { detectStyle } from '../render/style.js';
import type { CliIO } from './io.js';
import { openDb } from './shared.js';
import { inert, jsonText } from '../render/inert.js';
import { eventsWriter } from '../events/writer.js';
import { fileSafeId, liveFileWriter } from '../events/live-file.js';
import { exitCodeOf } from '../events/exit-code.js';
import { closest } from '../suggest.js';
import { formatNumber } from '../plural.js';

/** A number flag's value as the user will recognise it: yargs turns `abc` into NaN. */
export function given(value: number): string {
  return Number.isNaN(value) ? 'something that is not a number' : String(value);
}

export interface RunCliArgs extends HostArgs {
  question?: string;
  'question-file'?: string;
  preset: string;
  db?: string;
  'sign-key'?: string;
  'max-rounds'?: number;
  threshold?: number;
  'num-parallel'?: number;
  'vram-gib'?: number;
  hosts?: string;
  json?: boolean;
  events?: boolean;
  'show-thinking'?: boolean;
  quiet?: boolean;
  attach?: string[];
  'token-budget'?: number;
  constraint?: string[];
  protocol?: Preset['protocol']['kind'];
  'trust-preset-hosts'?: boolean;
  /** `--agent ID=MODEL`, repeatable: one agent's model for this run. */
  agent?: string[];
  /** Print the plan, the calls and estimates; call no model, record nothing. */
  'dry-run'?: boolean;
}

/**
 * Who asks for the run. The command line is the user; an MCP client is not: its attachments are
 * read only under the server's `--allow-dir` folders, and its preset is a built-in or a file there.
 */
export interface RunAsker {
  chooser: 'user' | 'mcp';
  allowDirs?: readonly string[];
  /** How the user consents to a preset's own servers here. */
  consent?: string;
}

/** Apply --max-rounds / --threshold / --token-budget / --constraint to a preset, validating them as the preset's own fields would be. */
export function applyOverrides(
  preset: Preset,
  args: { 'max-rounds'?: number; threshold?: number; 'token-budget'?: number; constraint?: string[]; protocol?: Preset['protocol']['kind']; agent?: string[] },
): Preset {
  const agents = agentModels(preset, args.agent ?? []);
  const maxRounds = args['max-rounds'];
  const threshold = args.threshold;
  const tokenBudget = args['token-budget'];
  if (tokenBudget !== undefined && (!Number.isInteger(tokenBudget) || tokenBudget < 1000)) {
    throw new InputError('BAD_FLAG', `--token-budget must be a whole number of tokens from 1000 up; got ${given(tokenBudget)}.`, {
      hint: 'A budget counts prompt plus reply tokens over the whole run; a three-agent debate spends several thousand per round.',
    });
  }
  const added = (args.constraint ?? []).map((c) => String(c).trim());
  if (added.some((c) => c === '')) throw new InputError('BAD_FLAG', '--constraint is empty.', { hint: 'Pass the constraint in quotes: --constraint "Budget under 10k EUR".' });
  if (maxRounds !== undefined && (!Number.isInteger(maxRounds) || maxRounds < 0 || maxRounds > 20)) {
    throw new InputError('BAD_FLAG', `--max-rounds must be a whole number from 0 to 20; got ${given(maxRounds)}.`);
  }
  if (threshold !== undefined && (!Number.isFinite(threshold) || threshold < 0 || threshold > 1)) {
    throw new InputError('BAD_FLAG', `--threshold must be a number from 0 to 1; got ${given(threshold)}.`, {
      hint: threshold > 1 && threshold <= 100 ? `It is a share, not a percentage: --threshold ${threshold / 100}.` : 'For example --threshold 0.85, the default.',
    });
  }
  // An explicit --protocol wins over the preset's kind, `auto` included; the advisor goes with `auto`.
  const { advisor, ...protocol } = preset.protocol;
  const kind = args.protocol ?? preset.protocol.kind;
  return {
    ...preset,
    agents,
    protocol: {
      ...protocol,
      kind,
      ...(advisor !== undefined && kind === 'auto' ? { advisor } : {}),
      ...(maxRounds === undefined ? {} : { maxRounds }),
      ...(threshold === undefined ? {} : { convergenceThreshold: threshold }),
      ...(tokenBudget === undefined ? {} : { tokenBudget }),
    },
    ...(added.length ? { constraints: [...(preset.constraints ?? []), ...added] } : {}),
  };
}

/**
 * The panel with each `--agent ID=MODEL` applied: that agent answers with MODEL, everything else of
 * it kept. The preset as run, and so its snapshot in the record, names the model used.
 */
function agentModels(preset: Preset, overrides: readonly string[]): Preset['agents'] {
  const ids = preset.agents.map((a) => a.id);
  const models = new Map<string, string>();
  for (const raw of overrides) {
    const text = String(raw);
    const eq = text.indexOf('=');
    const id = eq < 0 ? '' : text.slice(0, eq).trim();
    const model = eq < 0 ? '' : text.slice(eq + 1).trim();
    if (id === '' || model === '') {
      throw new InputError('BAD_FLAG', `--agent takes ID=MODEL; got \`${text}\`.`, { hint: `Name one of the preset's agents (${ids.join(', ')}) and a model, e.g. --agent ${ids[0] ?? 'ID'}=llama3.1:8b.` });
    }
    if (!ids.includes(id)) {
      const near = closest(id, ids);
      throw new InputError('UNKNOWN_AGENT', `--agent names \`${id}\`, which is not an agent of the preset ${preset.name}.${near ? ` Did you mean \`${near}\`?` : ''}`, {
        hint: `Its agents are ${ids.join(', ')}.`,
      });
    }
    if (models.has(id)) throw new InputError('BAD_FLAG', `--agent names \`${id}\` twice.`, { hint: 'Give each agent one model.' });
    models.set(id, model);
  }
  return preset.agents.map((a) => (models.has(a.id) ? { ...a, model: models.get(a.id)! } : a));
}

/**
 * The question of `run`: the argument, standard input for `-`, or `--question-file`, exactly
 * one of them; a file or standard input gets the checks of an attachment.
 */
export async function questionOf(args: Pick<RunCliArgs, 'question' | 'question-file'>, io: CliIO): Promise<string> {
  const file = args['question-file'];
  if (file !== undefined && args.question !== undefined) {
    throw new InputError('BAD_FLAG', 'Both a question and --question-file were given.', { hint: 'Pass the question one way: as an argument, as `-` for standard input, or with --question-file FILE.' });
  }
  if (file !== undefined) return readQuestionFile(file, io.cwd);
  if (args.question === undefined) {
    throw new InputError('NO_QUESTION', 'No question was given.', { hint: 'Pass it in quotes (`conclave run "…" --preset NAME`), as `-` to read standard input, or with --question-file FILE.' });
  }
  if (args.question !== '-') return args.question;
  const stdin = io.stdin ?? process.stdin;
  // On a terminal nothing says the command waits for typing: say it, and how to end it (even with --quiet).
  if ((stdin as { isTTY?: boolean }).isTTY) {
    const end = process.platform === 'win32' ? 'Ctrl-Z then Enter' : 'Ctrl-D on a new line';
    io.stderr.write(`Reading the question from standard input: type it, then press ${end} to end it (Ctrl-C to cancel).\n`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    chunks.push(buffer);
    size += buffer.length;
    // Past the limit the rest is not read: the check below refuses it by its size.
    if (size > MAX_ATTACHMENT_BYTES) break;
  }
  return questionFromBytes(Buffer.concat(chunks));
}

/** A run checked and read before anything starts: what `runDebate` needs, bar the listeners. */
export interface PreparedRun {
  /** Lines that say what is attached and where the question goes; shown even with --quiet. */
  header: string[];
  /** The preset as it would run (overrides applied), the question and the servers: what --dry-run reads. */
  preset: Preset;
  question: string;
  hosts: HostEntry[];
  /** The engine's options for this run, given the record it will be written to. */
  options(store: Store): Omit<RunDebateOptions, 'recorder' | 'listeners' | 'signal'>;
}

/**
 * Everything `run` checks before the first call: the question, the flags, the hosts, the
 * preset with its overrides, and every attached file, read whole. Throws the CLI's errors.
 */
export async function prepareRun(args: RunCliArgs, io: CliIO, asker: RunAsker = { chooser: 'user' }): Promise<PreparedRun> {
  const question = await questionOf(args, io);
  if (question.trim() === '') throw new InputError('EMPTY_QUESTION', 'The question is empty.', { hint: 'Pass the question in quotes: `conclave run "…" --preset NAME`.' });
  const numParallel = args['num-parallel'];
  if (numParallel !== undefined && (!Number.isInteger(numParallel) || numParallel < 1)) {
    throw new InputError('BAD_FLAG', `--num-parallel must be a whole number from 1 up; got ${given(numParallel)}.`);
  }
  const vramGiB = args['vram-gib'];
  if (vramGiB !== undefined && !(vramGiB > 0)) throw new InputError('BAD_FLAG', `--vram-gib must be above 0; got ${given(vramGiB)}.`);
  // --hosts, or an explicit --host, replaces a host list written in the preset.
  const hosts = args.hosts
    ? (await import('../config/load-hosts.js')).loadHostsFile(args.hosts, io.cwd)
    : args.host || args.api === 'openai' || args.embedded !== undefined
      ? [{ ...singleHost(args, io.env, io.cwd), ...(vramGiB === undefined ? {} : { vramGiB }), ...(numParallel === undefined ? {} : { numParallel }) }]
      : undefined;
  const allowDirs = asker.allowDirs ?? [];
  const loaded = loadPreset(args.preset, io.cwd, asker.chooser === 'mcp' ? mcpPresetGuard(args.preset, io.cwd, allowDirs, io.env) : undefined);
  const preset = applyOverrides(loaded.preset, args);
  parsePreset(preset, loaded.source);
  // Every file is read and checked before anything runs: the preset's relative to it, --attach relative to the working directory.
  const fromPreset = readPresetAttachments(preset.attach ?? [], dirname(loaded.source), io.env);
  const fromFlag = asker.chooser === 'mcp' ? readMcpAttachments(args.attach ?? [], io.cwd, allowDirs, io.env) : readAttachments(args.attach ?? [], io.cwd);
  const attachments = [...fromPreset, ...fromFlag];
  const host = hosts?.[0]?.url ?? resolveHost(args.host, io.env);
  // Who chose the servers, and so what may go to them: a preset's own hosts get no key and no foreign file without consent.
  const destinations: Destinations = !hosts && preset.hosts?.length ? { hosts: preset.hosts, chosenBy: 'preset' } : { hosts: hosts ?? [{ url: host }], chosenBy: 'user' };
  checkDestinations({
    destinations,
    presetSource: loaded.source,
    foreignFiles: [...fromPreset, ...(asker.chooser === 'mcp' ? fromFlag : [])].map((a) => a.name),
    trustPresetHosts: args['trust-preset-hosts'] === true,
    env: io.env,
    consent: asker.consent ?? '--trust-preset-hosts',
  });
  const to = destinationUrls(destinations.hosts);
  const attachedWith = asker.chooser === 'mcp' ? 'Attached by the MCP client' : 'Attached with --attach';
  const header = [
    ...fromPreset.map((a) => `Attached by the preset ${loaded.source}: ${a.name} (${formatNumber(a.bytes)} bytes, sha256 ${a.sha256.slice(0, 12)}), sent to ${to}`),
    ...fromFlag.map((a) => `${attachedWith}: ${a.name} (${formatNumber(a.bytes)} bytes, sha256 ${a.sha256.slice(0, 12)}), sent to ${to}`),
    ...destinations.hosts.filter((h) => h.apiKeyEnv !== undefined).map((h) => `The API key in $${h.apiKeyEnv} is sent to ${destinationUrls([h])} only${destinations.chosenBy === 'preset' ? `, a server the preset ${loaded.source} names` : ''}.`),
    ...(destinations.chosenBy === 'preset'
      ? [`The preset ${loaded.source} names its own hosts: the question${attachments.length ? ' and attachments go' : ' goes'} to ${to} (--host or --hosts overrides it).`]
      : []),
  ];
  return {
    header,
    preset,
    question,
    hosts: hosts ?? (destinations.chosenBy === 'preset' ? destinations.hosts : [{ url: host, ...(vramGiB === undefined ? {} : { vramGiB }), ...(numParallel === undefined ? {} : { numParallel }) }]),
    options: (store) => ({
      id: newDebateId(Date.now(), (id) => store.hasDebate(id)),
      question,
      preset,
      host,
      warnings: loaded.warnings,
      attachments,
      ...(numParallel === undefined ? {} : { numParallel }),
      ...(vramGiB === undefined ? {} : { vramGiB }),
      // A preset's own hosts passed the checks above: they are handed on, so the engine never falls back to the preset's list unchecked.
      ...(hosts ? { hosts } : destinations.chosenBy === 'preset' ? { hosts: destinations.hosts } : {}),
      env: io.env,
      // A rotating synthesizer takes its turn from the record: one step per debate already held with the preset.
      ...(preset.synthesizer.rotate ? { synthesizerTurn: store.countDebatesWithPreset(preset.name) } : {}),
    }),
  };
}

export async function runFromCli(args: RunCliArgs, io: CliIO): Promise<number> {
  let store: Store;
  let prepared: PreparedRun;
  try {
    prepared = await prepareRun(args, io);
    if (args['dry-run']) {
      const { dryRunFromCli } = await import('./dry-run-cli.js');
      return dryRunFromCli(prepared, args, io);
    }
    // Said even with --quiet: what leaves this machine, and where to, is never a surprise.
    if (prepared.header.length > 0) io.stderr.write(`${prepared.header.map((l) => inert(l)).join('\n')}\n`);
    store = await openDb(args.db, io, args['sign-key'] ? { signKey: args['sign-key'] } : {});
  } catch (err) {
    if (args.events) endBeforeStart(io, err);
    throw err;
  }
  return driveFromCli(io, store, args, (common) => runDebate({ ...prepared.options(store), ...common }));
}

/** With --events, a command refused before its run started still ends its output with the `end` line. */
export function endBeforeStart(io: CliIO, err: unknown, debateId: string | null = null): void {
  eventsWriter(io.stdout).end('failed', exitCodeOf(err), err instanceof Error ? err.message : String(err), debateId);
}

/** What every run from the command line passes the engine: the recorder, the live view, Ctrl-C. */
export interface CliRunHooks {
  recorder: DebateListener;
  listeners: DebateListener[];
  signal: AbortSignal;
  /** With --quiet: a host that left the pool or came back, said on stderr all the same. */
  notice?: (message: string) => void;
}

/**
 * Runs a debate (new or resumed) with the live view on stderr and Ctrl-C handling, then
 * prints the card or the JSON document; resolves to the exit code. Closes the store.
 */
export async function driveFromCli(
  io: CliIO,
  store: Store,
  args: { json?: boolean; events?: boolean; 'show-thinking'?: boolean; quiet?: boolean },
  start: (hooks: CliRunHooks) => Promise<DebateResult>,
  resume?: ResumePoint,
): Promise<number> {
  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = (): void => {
    interrupts += 1;
    if (interrupts === 1) {
      io.stderr.write('\nStopping: waiting for calls in flight to be cancelled (Ctrl-C again to quit at once)…\n');
      controller.abort();
    } else {
      // Everything finished so far is committed; the debate shows as interrupted on the next open.
      process.exit(130);
    }
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);

  const style = detectStyle(io.stderr, io.env);
  const live = args.quiet ? null : liveRenderer(io.stderr, style, { showThinking: args['show-thinking'] === true });
  const listeners: DebateListener[] = live ? [live] : [];
  // With --events, stdout carries the event lines and nothing else: no card, no document.
  const events = args.events ? eventsWriter(io.stdout) : null;
  if (events) listeners.push(events);
  // What each call is writing, for `conclave serve`'s page of the running debate.
  const streamFile = store.path === ':memory:' ? null : liveFileWriter(store.path);
  if (streamFile) listeners.push(streamFile);
  let debateId: string | null = null;
  let printed = false;
  listeners.push(
    Object.assign(
      (e: DebateEvent) => {
        if (e.type === 'debate.started') debateId = e.debateId;
      },
      { progress: false },
    ),
  );
  let gaveUp: StoreError | null = null;
  let reported: InterruptedError | null = null;
  const record = recorder(store, {
    ...(resume ? { resume } : {}),
    lockWaitMs: lockWaitFromEnv(io.env),
    // Shown even with --quiet: a run that waits for a lock must say why it seems to stall.
    notice: (line) => void io.stderr.write(`${line}\n`),
    onGiveUp: (err) => {
      gaveUp = err;
      controller.abort('the record stayed locked by another process past the lock wait');
    },
  });
  try {
    let result: DebateResult;
    try {
      // Said even with --quiet: a run that goes on with fewer hosts is slower, and the user should know why.
      const notice = live ? {} : { notice: (message: string) => void io.stderr.write(`warning: ${inert(message)}\n`) };
      result = await start({ recorder: record, listeners, signal: controller.signal, ...notice });
    } finally {
      await record.drain().catch(() => undefined);
    }
    if (gaveUp) throw (reported = keptInMemory(io, store, gaveUp, record.unwritten(), debateId));
    live?.close();
    const stored = store.getDebate(result.id);
    if (events) {
      const code = result.status === 'completed' ? 0 : 5;
      events.end(result.status, code, result.status === 'completed' ? null : (result.error ?? null));
      printed = true;
      if (!args.quiet) io.stderr.write(`Stored as ${result.id} in ${store.path}\n`);
      return code;
    }
    if (args.json) io.stdout.write(`${jsonText(debateDocument(stored), 2)}\n`);
    else io.stdout.write(renderCard(stored, detectStyle(io.stdout, io.env)));
    printed = true;
    if (!args.quiet) io.stderr.write(`Stored as ${result.id} in ${store.path}\n`);
    if (result.status === 'unsynthesized') throw stored.preset.protocol.kind === 'pipeline' ? unfiltered(result.id, result.error) : unsynthesized(result.id, result.error);
    return result.status === 'completed' ? 0 : 5;
  } catch (err) {
    live?.close();
    if (gaveUp && err !== reported) {
      const kept = keptInMemory(io, store, gaveUp, record.unwritten(), debateId);
      events?.end('interrupted', kept.exitCode, kept.message);
      throw kept;
    }
    if (events) events.end(debateId ? statusOf(store, debateId) : 'failed', exitCodeOf(err), err instanceof Error ? err.message : String(err));
    if (!printed && args.json && debateId && (err instanceof DebateFailedError || err instanceof InterruptedError)) {
      io.stdout.write(`${jsonText(debateDocument(store.getDebate(debateId)), 2)}\n`);
    }
    throw err;
  } finally {
    streamFile?.close();
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    store.close();
  }
}

/** The recorded status of a debate that ended in an error; `failed` when the record cannot say. */
function statusOf(store: Store, id: string): string {
  try {
    const status = store.getDebate(id).status;
    return status === 'running' ? 'interrupted' : status;
  } catch {
    return 'failed';
  }
}

/**
 * Where the events a run could not write are saved: beside the database, named by the debate. A
 * record handed over can hold any id (`../x/package`): one Conclave would not make names the file
 * by its hash instead, so the file stays beside the database.
 */
export function unwrittenFileOf(dbPath: string, debateId: string): string {
  return `${dbPath}.unwritten-${fileSafeId(debateId) ? debateId : createHash('sha256').update(debateId).digest('hex').slice(0, 16)}.json`;
}

/**
 * The recorder gave up (another process held the database's lock too long, or a write failed: a
 * full disk): the run stopped, interrupted. What could not be written is saved beside the
 * database and named on stderr, so no finished reply is lost; the record itself ends at the last
 * event written, resumable.
 */
function keptInMemory(io: CliIO, store: Store, err: StoreError, unwritten: DebateEvent[], known: string | null): InterruptedError {
  const finished = unwritten.filter((e): e is Extract<DebateEvent, { type: 'call.finished' }> => e.type === 'call.finished');
  const started = unwritten.some((e) => e.type === 'debate.started');
  const id = known ?? unwritten.find((e): e is Extract<DebateEvent, { type: 'debate.started' }> => e.type === 'debate.started')?.debateId ?? finished[0]?.call.debateId ?? 'debate';
  let saved = '';
  if (unwritten.length > 0 && store.path !== ':memory:') {
    const file = unwrittenFileOf(store.path, id);
    try {
      writeFileSync(file, `${jsonText({ format: 'conclave.unwritten', debateId: id, events: unwritten }, 2)}\n`);
      saved = ` They are saved in ${file}.`;
    } catch {
      // A disk that is full leaves a cut-off file: none is better than one that does not parse.
      rmSync(file, { force: true });
    }
  }
  for (const e of finished) io.stderr.write(`  not written: ${e.call.stage} call of ${inert(e.call.agentId)}, round ${e.call.round}, ${e.call.status}, ${e.call.raw.length} characters of reply\n`);
  // A debate whose own row was not written has nothing to resume: the recorder's hint says to run it again.
  const next = started ? '' : err.code === 'STORE_LOCKED' ? `Once the lock is released, go on with \`conclave resume ${id}\`. ` : `Go on with \`conclave resume ${id}\` once that is fixed. `;
  return new InterruptedError(`Debate ${id} stopped, interrupted: ${err.message.replace(/\.$/, '')}.${saved}`, { hint: `${next}${err.hint ?? ''}`.trim() });
}

/** Exit 5 for a review pipeline whose filter failed: the plan and reviews are kept, and the card lists them. */
function unfiltered(id: string, error: string | null): DebateFailedError {
  return new DebateFailedError('FILTER_FAILED', `Review ${id} ran its plan and reviews, but the filter failed: ${(error ?? 'no reason recorded').replace(/\.$/, '')}. The reviews are kept, and the card lists their observations.`, {
    hint: `See everything recorded with \`conclave show ${id}\`; run the review again with \`conclave run\`, with a larger model for the filter if it keeps failing.`,
  });
}

/** Exit 5: the command did not fully succeed, but every round is kept and the card shows them. */
export function unsynthesized(id: string, error: string | null): DebateFailedError {
  return new DebateFailedError('SYNTHESIS_FAILED', `Debate ${id} ran all its rounds, but the synthesis failed: ${(error ?? 'no reason recorded').replace(/\.$/, '')}. The rounds are kept, and the card shows each agent's final position.`, {
    hint: `Run \`conclave synthesize ${id}\` to synthesize it again from the stored transcript (--model M picks another synthesizer).`,
  });
}
