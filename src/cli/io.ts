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
