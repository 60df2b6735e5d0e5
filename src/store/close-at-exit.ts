/**
 * Every open record, closed as the process ends, whichever way it ends: a command's normal end,
 * `process.exit` (a closed stdout, a second Ctrl-C) or an uncaught error. 'exit' listeners run
 * synchronously before Node tears its environment down, so statements are finalized and the
 * database closed while the native module can still do it cleanly. (A signal with no listener
 * ends the process without running any code, native destructors included, so leaves nothing to do.)
 */
interface Closable {
  close(): void;
}

const open = new Set<Closable>();

function closeAll(): void {
  for (const record of open) {
    try {
      record.close();
    } catch {
      // The process is ending: a record that cannot close is left to SQLite's own recovery on next open.
    }
  }
  open.clear();
}

export function closeAtExit(record: Closable): void {
  if (open.size === 0 && !process.listeners('exit').includes(closeAll)) process.on('exit', closeAll);
  open.add(record);
}

export function closedBeforeExit(record: Closable): void {
  open.delete(record);
}
