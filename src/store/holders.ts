import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';

export interface FileHolder {
  pid: number;
  command: string | null;
  /** False when it has the files open for reading only (a viewer such as `conclave serve`): it cannot hold the write lock. */
  writes?: boolean;
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
    let holds = false;
    let writes = false;
    for (const fd of fds) {
      try {
        if (!names.has(readlinkSync(`/proc/${name}/fd/${fd}`))) continue;
        holds = true;
        // fdinfo's flags are octal open(2) flags: the low two bits are the access mode (0 = read-only).
        const flags = /flags:\s*([0-7]+)/.exec(readFileSync(`/proc/${name}/fdinfo/${fd}`, 'utf8'))?.[1];
        if (flags === undefined || (Number.parseInt(flags, 8) & 3) !== 0) writes = true;
      } catch {
        // The descriptor closed while we looked.
      }
    }
    if (!holds) continue;
    holders.push({ pid, command: commandLine(name), writes });
  }
  return holders;
}

/**
 * What the process was started as (`node bin/conclave.js run …`, `python3 probe.py`), from
 * /proc/PID/cmdline: its program's file name, then its arguments, clipped. Not /proc/PID/comm,
 * which is a thread's name (Node 24 names its main thread "MainThread"). The name a kernel
 * thread or a process that has just ended gives, when it has no command line, or null.
 */
export function commandLine(pid: string): string | null {
  let words: string[] = [];
  try {
    words = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((w) => w !== '');
  } catch {
    // The process ended while we looked.
  }
  if (words.length === 0) {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() || null;
    } catch {
      return null;
    }
  }
  const [program, ...args] = words;
  // Another user's arguments are shown to this one: no control characters, and not all of them.
  const text = [basename(program!), ...args].join(' ').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return text.length > COMMAND_WIDTH ? `${text.slice(0, COMMAND_WIDTH - 1)}…` : text;
}

const COMMAND_WIDTH = 80;

/** "process 4242 (node bin/conclave.js run …)", "processes 4242 (node …) and 4250 (sqlite3 c.db)", or "another process". */
export function describeHolders(holders: FileHolder[]): string {
  if (holders.length === 0) return 'another process';
  const named = holders.slice(0, 3).map((h) => `${h.pid}${h.command ? ` (${h.command})` : ''}`);
  const more = holders.length > 3 ? ` and ${holders.length - 3} more` : '';
  if (named.length === 1) return `process ${named[0]}`;
  return `processes ${named.slice(0, -1).join(', ')} and ${named.at(-1)}${more}`;
}
