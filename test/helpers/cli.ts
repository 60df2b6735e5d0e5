import type { CliIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';

/** A stand-in for stdout/stderr that keeps what the CLI writes (not a TTY, so output is plain). */
export function capture(columns = 100): NodeJS.WriteStream & { text: string } {
  const stream = {
    text: '',
    isTTY: false,
    columns,
    write(chunk: string | Uint8Array) {
      stream.text += String(chunk);
      return true;
    },
  };
  return stream as unknown as NodeJS.WriteStream & { text: string };
}

/** Runs the CLI in-process with captured, non-TTY output and an empty environment. */
export async function runCli(args: string[], cwd: string, columns = 100): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture(columns);
  const stderr = capture(columns);
  const io: CliIO = { stdout, stderr, env: {}, cwd };
  const code = await main(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}
