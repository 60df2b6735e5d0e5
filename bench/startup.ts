import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packagePath } from '../src/package-root.js';
import { quantile } from '../src/bench/stats.js';

/**
 * Start-up cost of everyday commands: CPU time (user + system) of the whole process, as a ratio
 * to a bare `node -e 0`, on a record with one debate. Each command runs paired with a bare node
 * start, alternating, and the ratio is the median over pairs (with the 25th and 75th percentiles,
 * to show the noise). `npm run bench:startup [-- PAIRS]` (default 15). Run `npm run build` first.
 */

const PAIRS = Number(process.argv[2] ?? 15);
const dir = mkdtempSync(join(tmpdir(), 'conclave-startup-'));
const cli = packagePath('bin', 'conclave.js');
const db = join(dir, 'startup.db');

// Every process reports its own CPU time as it exits, on file descriptor 3.
const probe = join(dir, 'cpu.mjs');
writeFileSync(probe, "import { writeSync } from 'node:fs';\nprocess.on('exit', () => { const u = process.cpuUsage(); writeSync(3, `${u.user + u.system}\\n`); });\n");

function cpuMs(args: string[]): number {
  const r = spawnSync(process.execPath, ['--import', probe, ...args], { cwd: dir, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  const text = (r.output[3] as string | null) ?? '';
  if (r.status !== 0 || text.trim() === '') throw new Error(`\`${args.join(' ')}\` exited ${r.status}: ${String(r.stderr).slice(0, 400)}`);
  return Number(text.trim()) / 1000;
}

try {
  const demo = spawnSync(process.execPath, [cli, 'demo', '--db', db, '--quiet', '--json', '--token-ms', '0'], { encoding: 'utf8' });
  if (demo.status !== 0) throw new Error(`demo failed: ${demo.stderr}`);
  const id = (JSON.parse(demo.stdout) as { id: string }).id;
  const commands: [string, string[], number][] = [
    ['--version', ['--version'], 1.5],
    ['list', ['list', '--db', db], 2],
    ['show ID', ['show', id, '--db', db], 2],
    ['export ID', ['export', id, '--db', db], 2],
    ['verify ID', ['verify', id, '--db', db], 2],
  ];
  const bare: number[] = [];
  const rows = commands.map(([name, args, target]) => {
    const ratios: number[] = [];
    const own: number[] = [];
    cpuMs([cli, ...args]); // warm the file cache
    for (let i = 0; i < PAIRS; i++) {
      const base = cpuMs(['-e', '0']);
      const ms = cpuMs([cli, ...args]);
      bare.push(base);
      own.push(ms);
      ratios.push(ms / base);
    }
    return { name, target, ms: quantile(own, 0.5), ratio: quantile(ratios, 0.5), p25: quantile(ratios, 0.25), p75: quantile(ratios, 0.75) };
  });
  process.stdout.write(`CPU time of the process against a bare \`node -e 0\` (median ${quantile(bare, 0.5).toFixed(0)} ms), median of ${PAIRS} pairs\n\n`);
  process.stdout.write('| command | CPU | ÷ bare node | 25th–75th percentile | target |\n|---|---|---|---|---|\n');
  for (const r of rows) process.stdout.write(`| \`conclave ${r.name}\` | ${r.ms.toFixed(0)} ms | ${r.ratio.toFixed(2)}× | ${r.p25.toFixed(2)}–${r.p75.toFixed(2)}× | ≤ ${r.target}× ${r.ratio <= r.target ? 'met' : 'not met'} |\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
