import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { renderBenchHtml } from '../bench/html.js';
import { renderBenchMarkdown, renderBenchSummary, renderComparisonMarkdown } from '../bench/markdown.js';
import { progressView } from '../bench/progress.js';
import { buildReport, compareRuns } from '../bench/report.js';
import { checkResumable, createRun, executeBench } from '../bench/runner.js';
import { builtInSuites, importGsm8k, importMmlu, loadSuite } from '../bench/suite.js';
import { loadPreset } from '../config/load-preset.js';
import type { Preset } from '../config/preset-schema.js';
import { HostError, InputError, isConclaveError } from '../errors.js';
import { resolveHost } from '../ollama/host.js';
import { singleHost } from './host-args.js';
import { formatFittedTable } from '../render/table.js';
import { type Paint, detectStyle, painter } from '../render/style.js';
import { defaultDbPath } from '../store/open.js';
import { readRescoreRecords } from '../store/rescore-read.js';
import { doneTrialKeys, getBenchRun, listBenchRuns, loadBenchData, resolveBenchRunId } from '../store/bench.js';
import { type BenchVerdict, benchSealWord as sealWord, glanceBenchRun, UNSEALED_RUN } from '../store/bench-seal.js';
import type { BenchCompareArgs, BenchImportArgs, BenchListArgs, BenchReportArgs, BenchRunArgs } from './bench-args.js';
import { type CliIO, outputColumns, tellUser } from './io.js';
import { openDb } from './shared.js';
import { checkIntact } from './rescore-cli.js';
import { inert, inertLine, jsonText } from '../render/inert.js';
import { type EventCounter, eventsWriter } from '../events/writer.js';
import { exitCodeOf } from '../events/exit-code.js';
import { plural } from '../plural.js';
import { GATE_EXIT, gateFailures, parseGate } from '../bench/gate.js';

const usageHint = 'Start a run with `conclave bench --suite arithmetic --preset NAME`, or continue one with `conclave bench --resume RUN`.';

/**
 * The preset with `think` set for every role, named for it (`thinking · think off`), so a bench can
 * set the same panel thinking and not side by side. Models without the capability are left alone.
 */
export function withThinking(preset: Preset, on: boolean): Preset {
  return {
    ...preset,
    name: `${preset.name} · think ${on ? 'on' : 'off'}`,
    agents: preset.agents.map((a) => ({ ...a, think: on })),
    judge: { ...preset.judge, think: on },
    synthesizer: { ...preset.synthesizer, think: on },
    ...(preset.tensions ? { tensions: { ...preset.tensions, think: on } } : {}),
  };
}

/** A path as one shell word: quoted only when it needs to be. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

export async function benchRunFromCli(args: BenchRunArgs, io: CliIO): Promise<number> {
  if (!args.events) return runBench(args, io, null);
  // One numbering for the whole output: items running at once interleave their lines.
  const counter: EventCounter = { seq: 0 };
  const closing = eventsWriter(io.stdout, { counter });
  try {
    const code = await runBench(args, io, counter);
    closing.end('completed', code, null, null);
    return code;
  } catch (err) {
    closing.end('failed', exitCodeOf(err), err instanceof Error ? err.message : String(err), null);
    throw err;
  }
}

async function runBench(args: BenchRunArgs, io: CliIO, counter: EventCounter | null): Promise<number> {
  const presets = args.preset ?? [];
  if (args.resume !== undefined && (args.suite !== undefined || presets.length > 0 || args.limit !== undefined)) {
    throw new InputError('BAD_FLAG', '--resume continues a run with its own suite and presets; it cannot be combined with --suite, --preset or --limit.', {
      hint: `Run \`conclave bench --resume ${args.resume}\` alone, or start a new run without --resume.`,
    });
  }
  if (args.resume === undefined) {
    if (args.suite === undefined) throw new InputError('BAD_FLAG', 'Name the suite to run with --suite.', { hint: usageHint });
    if (presets.length === 0) throw new InputError('BAD_FLAG', 'Name at least one preset with --preset.', { hint: usageHint });
  }
  for (const [flag, value] of [['concurrency', args.concurrency], ['num-parallel', args['num-parallel']], ['seed', args.seed]] as const) {
    if (value !== undefined && args.resume !== undefined) {
      throw new InputError('BAD_FLAG', `--${flag} is stored with the run; a resume uses the stored value.`, { hint: `Drop --${flag}.` });
    }
  }

  // The gate is read before any call, so a typo in it costs nothing.
  const gate = parseGate(args['fail-under'] ?? []);
  // --hosts, or one OpenAI-compatible --host, makes a host list; a plain --host stays the single Ollama host it always was.
  const hosts = args.hosts
    ? (await import('../config/load-hosts.js')).loadHostsFile(args.hosts, io.cwd)
    : args.api === 'openai' || args.embedded !== undefined
      ? [singleHost(args, io.env, io.cwd)]
      : undefined;
  if (hosts) (await import('../schedule/scheduler.js')).validateHostEntries(hosts);
  if (args['dry-run']) {
    if (args.resume !== undefined) throw new InputError('BAD_FLAG', '--dry-run plans a new run; it cannot be combined with --resume.', { hint: 'Drop --dry-run, or give --suite and --preset instead of --resume.' });
    const suite = args.suite!;
    const all = await loadSuite(builtInSuites.includes(suite) ? suite : resolve(io.cwd, suite));
    const items = args.limit === undefined ? all : all.slice(0, args.limit);
    const { benchDryRun } = await import('./dry-run-cli.js');
    return benchDryRun(
      presets.map((name) => loadPreset(name, io.cwd).preset),
      items.map((i) => i.question),
      hosts ?? [{ url: resolveHost(args.host, io.env) }],
      args,
      io,
    );
  }
  const store = await openDb(args.db, io);
  try {
    let runId: string;
    if (args.resume !== undefined) {
      runId = resolveBenchRunId(store, args.resume);
      checkResumable(getBenchRun(store, runId), doneTrialKeys(store, runId).size);
    } else {
      const suite = args.suite!;
      const items = await loadSuite(builtInSuites.includes(suite) ? suite : resolve(io.cwd, suite));
      const named = presets.map((name) => loadPreset(name, io.cwd));
      for (const { warnings, source } of named) for (const w of warnings) io.stderr.write(inert(`conclave: ${source}: ${w}\n`));
      for (const { preset, source } of named) {
        if (preset.hosts?.length) io.stderr.write(inert(`conclave: ${source} names its own hosts; the bench runs every preset on its own (${hosts ? '--hosts' : '--host'}), and those are not contacted.\n`));
      }
      if (args.resume === undefined && args.think !== undefined && new Set(args.think).size !== args.think.length) {
        throw new InputError('BAD_FLAG', 'Give each --think value once: `--think on`, `--think off`, or both.', { hint: usageHint });
      }
      const loaded = args.think === undefined ? named : named.flatMap((l) => [...new Set(args.think)].map((t) => ({ ...l, preset: withThinking(l.preset, t === 'on') })));
      // A single host that does not answer fails here, before the run is stored: nothing to resume, nothing left in `bench list`.
      if (!hosts) await (await import('../backend/connect.js')).connect({ url: resolveHost(args.host, io.env) }, io.env).version();
      runId = createRun({
        store,
        suite,
        items,
        presets: loaded.map((l) => ({ preset: l.preset, source: l.source })),
        host: hosts?.[0]?.url ?? resolveHost(args.api === 'openai' ? undefined : args.host, io.env),
        ...(hosts ? { hosts } : {}),
        ...(args.seed === undefined ? {} : { seed: args.seed }),
        ...(args.limit === undefined ? {} : { limit: args.limit }),
        ...(args.concurrency === undefined ? {} : { concurrency: args.concurrency }),
        ...(args['num-parallel'] === undefined ? {} : { numParallel: args['num-parallel'] }),
      });
    }
    const run = getBenchRun(store, runId);
    const total = run.itemCount * run.presets.length;
    const already = doneTrialKeys(store, runId).size;
    if (!args.quiet) {
      const what = `${plural(run.itemCount, 'item')} × ${plural(run.presets.length, 'preset')}`;
      tellUser(
        io,
        args.resume === undefined
          ? `Bench run ${runId}: ${what}. If it stops, continue with \`conclave bench --resume ${runId}\`.\n`
          : `Resuming bench run ${runId}: ${already} of ${total} item runs already done (${what}).\n`,
      );
    }

    const controller = new AbortController();
    let interrupts = 0;
    const onSigint = (): void => {
      interrupts += 1;
      if (interrupts === 1) {
        io.stderr.write('\nStopping: finished items are kept; waiting for calls in flight to be cancelled (Ctrl-C again to quit at once)…\n');
        controller.abort();
      } else {
        process.exit(130);
      }
    };
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigint);
    const view = args.quiet ? null : progressView(io.stderr, detectStyle(io.stderr, io.env), { total, resumedFrom: already });
    // The bar shows at once and its elapsed time moves while items run, not only when one ends.
    view?.tick();
    const ticker = view ? setInterval(() => view.tick(), 1000) : null;
    ticker?.unref();
    try {
      await executeBench({
        store,
        runId,
        ...(args.resume !== undefined && hosts ? { hosts } : args.host !== undefined && args.resume !== undefined ? { host: resolveHost(args.host, io.env) } : {}),
        env: io.env,
        signal: controller.signal,
        ...(view ? { onProgress: (p) => view.update(p) } : {}),
        // Said even with --quiet: a run that goes on with fewer hosts is slower, and the user should know why.
        notice: (message) => (view ? view.note(message) : void io.stderr.write(`bench: warning: ${inert(message)}\n`)),
        ...(counter ? { listenersFor: () => [eventsWriter(io.stdout, { counter })] } : {}),
      });
    } catch (err) {
      // A resume goes back to the run's stored servers, whatever OLLAMA_HOST says: the way on is --host.
      if (args.resume !== undefined && args.host === undefined && !hosts && isConclaveError(err) && err.code === 'HOST_UNREACHABLE') {
        throw new HostError('HOST_UNREACHABLE', `${err.message.replace(/\.$/, '')}: the server bench run ${runId} was stored with.`, {
          hint: `Start it again, or go on with another server: \`conclave bench --resume ${runId} --host URL\` (a resume keeps the run's stored host and does not read OLLAMA_HOST).`,
          cause: err,
        });
      }
      throw err;
    } finally {
      if (ticker) clearInterval(ticker);
      view?.close();
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigint);
    }

    const report = buildReport(loadBenchData(store, runId));
    if (counter) {
      // stdout carried the events; the summary is one `conclave bench report` away.
    } else if (args.json) {
      io.stdout.write(`${jsonText(report, 2)}\n`);
    } else {
      io.stdout.write(renderBenchSummary(report));
    }
    if (!args.quiet) {
      // Name the database unless it is the one every command finds by itself.
      const dbFlag = store.path === resolve(defaultDbPath(io.env)) ? '' : ` --db ${shellWord(store.path)}`;
      tellUser(io, `Stored as bench run ${runId} in ${store.path}. Full report: \`conclave bench report ${runId}${dbFlag} --format html --out report.html\`\n`);
    }
    const failures = gateFailures(gate, report.conditions);
    if (failures.length > 0) {
      // Said even with --quiet: it is why the command fails.
      tellUser(io, `bench: --fail-under failed (exit ${GATE_EXIT}):\n${failures.map((f) => `  ${inert(f)}`).join('\n')}\n`);
      return GATE_EXIT;
    }
    if (gate.length > 0 && !args.quiet) tellUser(io, `bench: --fail-under passed: ${gate.map((g) => `${g.condition} ≥ ${(g.floor * 100).toFixed(1)}%`).join(', ')}.\n`);
    return 0;
  } finally {
    store.close();
  }
}

async function writeOut(text: string, out: string | undefined, io: CliIO): Promise<void> {
  if (out === undefined) {
    io.stdout.write(text);
    return;
  }
  const path = resolve(io.cwd, out);
  try {
    await writeFile(path, text, 'utf8');
  } catch (err) {
    throw new InputError('OUT_UNWRITABLE', `Cannot write ${path}: ${(err as Error).message}`, { hint: 'Check that the folder exists and that you may write there.', cause: err });
  }
  io.stderr.write(`Wrote ${path}\n`);
}

export async function benchReportFromCli(args: BenchReportArgs, io: CliIO): Promise<number> {
  const store = await openDb(args.db, io, { readonly: true });
  try {
    const data = loadBenchData(store, resolveBenchRunId(store, args.run), 'No report was written');
    if (data.integrity.notice) io.stderr.write(`${inertLine(data.integrity.notice)}\n`);
    const debateIds = data.trials.flatMap((t) => (t.debateId === null ? [] : [t.debateId]));
    // Figures over an edited debate would report the edit as what the panel did, as a re-score would.
    checkIntact(store, debateIds, { task: 'report on', done: 'No report was written' });
    // The debates' calls and judge rounds, read without their messages: the rules section re-scores from them.
    const records = readRescoreRecords(store, debateIds);
    const report = buildReport(data, { records });
    const text = args.format === 'json' ? `${jsonText(report, 2)}\n` : args.format === 'html' ? renderBenchHtml(report) : renderBenchMarkdown(report);
    await writeOut(text, args.out, io);
    return 0;
  } finally {
    store.close();
  }
}

export async function benchCompareFromCli(args: BenchCompareArgs, io: CliIO): Promise<number> {
  const store = await openDb(args.db, io, { readonly: true });
  try {
    const a = loadBenchData(store, resolveBenchRunId(store, args.a), 'Nothing was compared');
    const b = loadBenchData(store, resolveBenchRunId(store, args.b), 'Nothing was compared');
    for (const notice of [a.integrity.notice, b.integrity.notice]) if (notice) io.stderr.write(`${inertLine(notice)}\n`);
    const comparison = compareRuns(a, b);
    io.stdout.write(args.format === 'json' ? `${jsonText(comparison, 2)}\n` : renderComparisonMarkdown(comparison));
    return 0;
  } finally {
    store.close();
  }
}

export async function benchImportFromCli(args: BenchImportArgs, io: CliIO): Promise<number> {
  const path = resolve(io.cwd, args.file);
  const items = args.kind === 'gsm8k' ? await importGsm8k(path) : await importMmlu(path);
  await writeOut(items.map((item) => `${JSON.stringify(item)}\n`).join(''), args.out, io);
  if (args.out !== undefined) io.stderr.write(`${plural(items.length, 'item')}; run them with \`conclave bench --suite ${args.out} --preset NAME\`\n`);
  return 0;
}

export async function benchListFromCli(args: BenchListArgs, io: CliIO): Promise<number> {
  const store = await openDb(args.db, io, { readonly: true });
  try {
    const runs = listBenchRuns(store);
    // Each run in one snapshot: a run being written is read as its last write left it.
    const verdicts = runs.map((r) => store.read(`check the seal of bench run \`${r.id}\``, (s) => s.transaction(() => glanceBenchRun(s, r.id)).deferred()));
    if (args.json) {
      // verify --json's fields, but for the run's id, which `id` already gives.
      const sealState = (v: BenchVerdict | null) => {
        if (v === null) return null;
        const { runId: _, ...state } = v;
        return state;
      };
      io.stdout.write(`${jsonText(runs.map(({ presets, ...r }, i) => ({ ...r, presets: presets.map((p) => p.name), sealState: sealState(verdicts[i] ?? null) })), 2)}\n`);
      return 0;
    }
    if (runs.length === 0) {
      io.stderr.write(`No bench runs in ${store.path}. ${usageHint}\n`);
      return 0;
    }
    const paint = painter(detectStyle(io.stdout, io.env));
    const table = formatFittedTable(
      ['id', 'status', 'seal', 'done', 'started', 'suite', 'presets'],
      runs.map((r, i) => [r.id, r.status, sealWord(verdicts[i] ?? null), `${r.trialsDone}/${r.itemCount * r.presets.length}`, new Date(r.createdAt).toISOString().replace('T', ' ').slice(0, 16), clipText(r.suite, 30), r.presets.map((p) => p.name).join(', ')]),
      outputColumns(io),
    );
    // The seal column is painted after the table is laid out, so colour takes no room in it.
    const [header = '', ...lines] = table.split('\n');
    const at = header.indexOf('  seal') + 2;
    io.stdout.write(
      [header, ...lines.map((line, i) => (i < verdicts.length ? paintCell(line, at, sealWord(verdicts[i] ?? null), paint) : line))].join('\n'),
    );
    for (const note of sealNotes(verdicts)) tellUser(io, `${inertLine(note)}\n`);
    return 0;
  } finally {
    store.close();
  }
}

function paintCell(line: string, at: number, word: string, paint: Paint): string {
  if (line.slice(at, at + word.length) !== word) return line;
  const colour = word === 'BROKEN' ? 'red' : word === 'unsealed' || word === 'adopted' ? 'yellow' : 'green';
  return `${line.slice(0, at)}${paint(colour, word)}${line.slice(at + word.length)}`;
}

/** The lines under the list that say what a state other than sealed or signed means, and each broken run's first changed row. */
function sealNotes(verdicts: readonly (BenchVerdict | null)[]): string[] {
  const notes: string[] = [];
  for (const v of verdicts) {
    if (v?.state === 'broken') notes.push(`Bench run ${v.runId} does not match its seal: ${v.problem}. \`conclave verify ${v.runId}\` checks every row of it.`);
  }
  const keys = new Map<string, number>();
  for (const v of verdicts) if (v?.state === 'sealed' && v.signedBy !== undefined) keys.set(v.signedBy, (keys.get(v.signedBy) ?? 0) + 1);
  if (keys.size > 0) {
    const named = [...keys].map(([key, n]) => `key ${key.slice(0, 16)} (${plural(n, 'run')})`).join(', ');
    notes.push(`signed: by ${named}, as ${keys.size === 1 && [...keys.values()][0] === 1 ? 'its seal says' : 'their seals say'}; \`conclave verify RUN --public-key FILE\` proves a signature, which the list does not check.`);
  }
  const adopted = verdicts.flatMap((v) => (v?.state === 'sealed' && v.adoptedAt !== undefined ? [v.adoptedAt] : []));
  if (adopted.length > 0) {
    const they = adopted.length === 1 ? 'it' : 'they';
    notes.push(`adopted: recorded before bench runs were sealed, and sealed as ${they} stood when the file was upgraded, ${new Date(Math.min(...adopted)).toISOString().slice(0, 10)}; what ${they} held before then cannot be checked.`);
  }
  if (verdicts.some((v) => v?.state === 'unsealed')) notes.push(`unsealed: ${UNSEALED_RUN}. The next command that writes to this file seals such runs as they stand.`);
  return notes;
}

/** A suite given as a long path keeps its end, where its name is. */
function clipText(text: string, max: number): string {
  return text.length > max ? `…${text.slice(text.length - max + 1)}` : text;
}
