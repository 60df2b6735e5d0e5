import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CallRecord } from '../src/engine/events.js';
import { openStore } from '../src/store/open.js';
import { packagePath } from '../src/package-root.js';

/**
 * Readers at scale: records a file of `BENCH_DEBATES` debates (default 10,000; each with its panel,
 * `BENCH_CALLS` calls of about 3 KB, turns and a judgement, sealed), then times `conclave list`
 * and `conclave verify --all` on it with the built CLI, and prints each one's wall time and peak
 * RSS (from /usr/bin/time). Run `npm run build` first. `npm run bench:record`.
 */

const DEBATES = Number(process.env.BENCH_DEBATES ?? 10_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 6);
const keep = process.env.BENCH_KEEP === '1';

const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-record-'));
const file = join(dir, 'record.db');
const reply = JSON.stringify({ position: 'Shard by tenant.', reasoning: 'x'.repeat(2500) });
const agents = ['ada', 'bo', 'cy'];

function callOf(debateId: string, i: number): CallRecord {
  return {
    debateId,
    stage: i < agents.length ? 'opening' : 'critique',
    round: i < agents.length ? 0 : 1,
    agentId: agents[i % agents.length]!,
    attempt: 0,
    host: 'http://127.0.0.1:11434',
    model: 'llama3.1:8b',
    messages: [{ role: 'user', content: 'Should we shard the database?' }],
    options: { temperature: 0.7, num_ctx: 8192 },
    format: null,
    raw: reply,
    parsed: JSON.parse(reply) as unknown,
    status: 'ok',
    validationError: null,
    error: null,
    metrics: { promptTokens: 200, completionTokens: 600, totalDurationNs: 1e9, loadDurationNs: 0, promptEvalDurationNs: 1e8, evalDurationNs: 9e8, doneReason: 'stop' },
    startedAt: 1,
    finishedAt: 2,
  } as unknown as CallRecord;
}

const t0 = Date.now();
const store = openStore(file);
for (let d = 0; d < DEBATES; d++) {
  const id = `bench-${String(d).padStart(6, '0')}`;
  store.createDebate({
    id,
    question: 'Should we shard the database?',
    preset: { name: 'trio', agents: agents.map((a) => ({ id: a, model: 'llama3.1:8b' })), judge: { model: 'qwen2.5:3b' }, synthesizer: { model: 'llama3.1:8b' }, protocol: { maxRounds: 1, convergenceThreshold: 0.85 } } as never,
    engineVersion: '0.1.0',
    host: 'http://127.0.0.1:11434',
    agents: agents.map((a) => ({ id: a, model: 'llama3.1:8b', persona: null, cluster: null, role: 'debater' as const, digest: null })),
    createdAt: 1_700_000_000_000 + d,
  });
  for (let c = 0; c < CALLS; c++) store.recordCall(callOf(id, c));
  store.finishDebate(id, { status: 'completed', exitReason: 'converged', error: null, roundsCompleted: 1, finalConvergence: 0.9, finishedAt: 1_700_000_000_000 + d + 1 });
}
store.close();
const size = statSync(file).size;
console.log(`record: ${DEBATES.toLocaleString('en-US')} debates, ${(DEBATES * CALLS).toLocaleString('en-US')} calls, ${(size / 2 ** 20).toFixed(0)} MiB, written in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

const cli = packagePath('bin', 'conclave.js');
const timedRun = (args: string[], note = ''): void => {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', process.execPath, cli, ...args, '--db', file], { encoding: 'utf8', maxBuffer: 1 << 30 });
  const [seconds, kib] = (r.stderr.trim().split('\n').at(-1) ?? '').split(' ');
  console.log(`conclave ${args.join(' ').padEnd(22)} exit ${r.status}  ${Number(seconds).toFixed(2)} s  peak RSS ${(Number(kib) / 1024).toFixed(0)} MiB${note}`);
};
for (const args of [['list'], ['list', '--limit', '100000'], ['verify', '--all']]) timedRun(args);

// A run that died mid-debate leaves its debate `running`: readers show it interrupted without
// writing the file, and still read the file in place, whatever its size.
const crash = join(dir, 'crash.ts');
writeFileSync(
  crash,
  [
    `import { openStore } from ${JSON.stringify(pathToFileURL(packagePath('src', 'store', 'open.ts')).href)};`,
    'const store = openStore(process.argv[2]);',
    "store.createDebate({ id: 'crashed', question: 'q', preset: { name: 'trio' }, engineVersion: '0.1.0', host: 'h', agents: [], createdAt: Date.now() });",
    'process.exit(0);',
  ].join('\n'),
);
const crashed = spawnSync(process.execPath, ['--import', 'tsx', crash, file], { cwd: packagePath(), encoding: 'utf8' });
if (crashed.status !== 0) throw new Error(`the crashing run failed: ${crashed.stderr}`);
timedRun(['list'], '  (with a debate whose process died)');

// One long debate: `verify` reads its calls one at a time.
const BIG_CALLS = Number(process.env.BENCH_BIG_CALLS ?? 5_000);
const big = openStore(file);
big.createDebate({
  id: 'long',
  question: 'Should we shard the database?',
  preset: { name: 'trio', agents: agents.map((a) => ({ id: a, model: 'llama3.1:8b' })), judge: { model: 'qwen2.5:3b' }, synthesizer: { model: 'llama3.1:8b' }, protocol: { maxRounds: 1, convergenceThreshold: 0.85 } } as never,
  engineVersion: '0.1.0',
  host: 'http://127.0.0.1:11434',
  agents: agents.map((a) => ({ id: a, model: 'llama3.1:8b', persona: null, cluster: null, role: 'debater' as const, digest: null })),
  createdAt: Date.now(),
});
const longPrompt = 'Earlier answers: '.concat('x'.repeat(8000));
for (let c = 0; c < BIG_CALLS; c++) big.recordCall({ ...callOf('long', c), messages: [{ role: 'user', content: longPrompt }] });
big.finishDebate('long', { status: 'completed', exitReason: 'max_rounds', error: null, roundsCompleted: 1, finalConvergence: 0.5, finishedAt: Date.now() });
big.close();
timedRun(['verify', 'long'], `  (one debate of ${BIG_CALLS.toLocaleString('en-US')} calls of about 11 KB)`);
console.log(`no -wal or -shm left beside the record: ${!existsSync(`${file}-wal`) && !existsSync(`${file}-shm`)}`);
if (keep) console.log(`kept: ${file}`);
else rmSync(dir, { recursive: true, force: true });
