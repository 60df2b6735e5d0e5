import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { packagePath } from '../src/package-root.js';
import type { SimCounters, SimOptions } from '../src/sim/index.js';

export interface SimProcess {
  url: string;
  counters(): Promise<SimCounters>;
  reset(): Promise<void>;
  stop(): void;
}

/** Start the simulator in a child process (see sim-child.ts). */
export async function startSimProcess(options: Omit<SimOptions, 'respond'>, words = 20): Promise<SimProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', packagePath('bench', 'sim-child.ts'), JSON.stringify(options), String(words)], {
    cwd: packagePath(),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const r = await lines.next();
    if (r.done) throw new Error('the simulator process exited');
    return r.value;
  };
  const { url } = JSON.parse(await next()) as { url: string };
  return {
    url,
    async counters() {
      child.stdin.write('counters\n');
      return JSON.parse(await next()) as SimCounters;
    },
    async reset() {
      child.stdin.write('reset\n');
      await next();
    },
    stop() {
      child.stdin.end();
      child.kill('SIGTERM');
    },
  };
}
