import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface FileHolder {
  pid: number;
  command: string | null;
}

/**
 * Other processes on this machine that have the database (or its -wal/-shm) open,
 * found through /proc where the system has one; empty where it cannot be known.
 */
export function fileHolders(file: string): FileHolder[] {
  const names = new Set([file, `${file}-wal`, `${file}-shm`, `${file}-journal`]);
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const holders: FileHolder[] = [];
  for (const name of pids) {
    const pid = Number(name);
    if (pid === process.pid) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${name}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        return names.has(readlinkSync(`/proc/${name}/fd/${fd}`));
      } catch {
        return false;
      }
    });
    if (!holds) continue;
    let command: string | null = null;
    try {
      command = readFileSync(`/proc/${name}/comm`, 'utf8').trim() || null;
    } catch {
      // The process ended while we looked.
    }
    holders.push({ pid, command });
  }
  return holders;
}

/** "process 4242 (node)", "processes 4242 (node) and 4250 (sqlite3)", or "another process". */
export function describeHolders(holders: FileHolder[]): string {
  if (holders.length === 0) return 'another process';
  const named = holders.slice(0, 3).map((h) => `${h.pid}${h.command ? ` (${h.command})` : ''}`);
  const more = holders.length > 3 ? ` and ${holders.length - 3} more` : '';
  if (named.length === 1) return `process ${named[0]}`;
  return `processes ${named.slice(0, -1).join(', ')} and ${named.at(-1)}${more}`;
}
