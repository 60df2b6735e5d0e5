import { columnsFromEnv } from '../render/style.js';
import { wrapLine } from '../render/wrap.js';

/** Where a command writes: stdout for results, stderr for progress and errors. Injected so tests can run the CLI in-process. */
export interface CliIO {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Where `run -` reads its question; standard input unless a test gives its own. */
  stdin?: NodeJS.ReadableStream;
}

export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd(), stdin: process.stdin };
}

/** Options every command accepts. */
export interface GlobalArgs {
  debug?: boolean;
}

/** A command sets its exit code here instead of calling process.exit, so output is flushed. */
export class ExitCode {
  value = 0;
}

/**
 * Writes a message to stderr; on a terminal each line is wrapped at a word boundary to its
 * width (continuations indented), so no word breaks at the edge. Piped output stays one line each.
 */
export function tellUser(io: Pick<CliIO, 'stderr'>, text: string): void {
  const columns = io.stderr.isTTY === true ? io.stderr.columns : undefined;
  if (!columns || columns < 20) {
    io.stderr.write(text);
    return;
  }
  io.stderr.write(text.split('\n').map((l) => wrapLine(l, columns).join('\n')).join('\n'));
}

/** Width a table on stdout may take: the terminal's, else `COLUMNS` when set, else 100 columns (pipes, files, CI). */
export function outputColumns(io: Pick<CliIO, 'stdout' | 'env'>): number {
  const columns = io.stdout.isTTY === true ? io.stdout.columns : columnsFromEnv(io.env) ?? undefined;
  return columns && columns >= 40 ? columns : 100;
}
