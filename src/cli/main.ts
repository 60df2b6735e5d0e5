import yargs from 'yargs';
import { isConclaveError } from '../errors.js';
import { inert } from '../render/inert.js';
import { benchCommand } from './commands/bench.js';
import { demoCommand } from './commands/demo.js';
import { exportCommand } from './commands/export.js';
import { hostsCommand } from './commands/hosts.js';
import { importCommand } from './commands/import.js';
import { keysCommand } from './commands/keys.js';
import { listCommand } from './commands/list.js';
import { mcpCommand } from './commands/mcp.js';
import { modelsCommand } from './commands/models.js';
import { presetsCommand } from './commands/presets.js';
import { replayCommand } from './commands/replay.js';
import { resumeCommand } from './commands/resume.js';
import { runCommand } from './commands/run.js';
import { serveCommand } from './commands/serve.js';
import { showCommand } from './commands/show.js';
import { simCommand } from './commands/sim.js';
import { synthesizeCommand } from './commands/synthesize.js';
import { verifyCommand } from './commands/verify.js';
import { type CliIO, ExitCode, processIO } from './io.js';

class UsageError extends Error {}

/** Thrown after yargs has validated a command line, to stop before its handler runs. */
class ParsedOnly extends Error {}

/** Runs the CLI and resolves to the process exit code. Never throws. */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  const exit = new ExitCode();
  const debug = argv.includes('--debug');
  try {
    await cliParser(argv, io, exit).parseAsync();
    return exit.value;
  } catch (err) {
    return report(err, io, debug);
  }
}

/**
 * Whether the CLI accepts a command line (command, positionals, flags, choices),
 * without running it: null when it does, else yargs' message. The docs test uses it.
 */
export async function checkCommandLine(argv: string[], io: CliIO = processIO()): Promise<string | null> {
  const parser = cliParser(argv, io, new ExitCode()).middleware(() => {
    throw new ParsedOnly();
  });
  try {
    await parser.parseAsync();
    // --help and the like end without reaching a command.
    return null;
  } catch (err) {
    if (err instanceof ParsedOnly) return null;
    if (err instanceof UsageError) return err.message;
    throw err;
  }
}

function cliParser(argv: string[], io: CliIO, exit: ExitCode) {
  const parser = yargs(argv)
    .scriptName('conclave')
    .usage('$0 <command> [options]\n\nStructured debates between local Ollama models, recorded in SQLite.')
    .command(runCommand(io, exit, argv))
    .command(resumeCommand(io, exit))
    .command(listCommand(io, exit))
    .command(showCommand(io, exit))
    .command(synthesizeCommand(io, exit))
    .command(replayCommand(io, exit))
    .command(exportCommand(io, exit))
    .command(importCommand(io, exit))
    .command(verifyCommand(io, exit))
    .command(keysCommand(io, exit))
    .command(modelsCommand(io, exit))
    .command(hostsCommand(io, exit))
    .command(presetsCommand(io, exit))
    .command(simCommand(io, exit))
    .command(demoCommand(io, exit))
    .command(benchCommand(io, exit))
    .command(serveCommand(io, exit))
    .command(mcpCommand(io, exit))
    .option('debug', { type: 'boolean', describe: 'Print stack traces for errors', global: true })
    .demandCommand(1, 'Name a command, e.g. `npx conclave run "question" --preset tech-decision`.')
    .strict()
    .help()
    .alias('h', 'help')
    .version(false)
    .wrap(Math.min(100, io.stdout.columns ?? 100))
    .exitProcess(false)
    .fail((msg, err) => {
      if (err) throw err;
      throw new UsageError(msg);
    });
  parser.command(
    'version',
    'Print the Conclave version',
    () => {},
    async () => {
      const { VERSION } = await import('../version.js');
      io.stdout.write(`${VERSION}\n`);
    },
  );
  return parser;
}

function report(err: unknown, io: CliIO, debug: boolean): number {
  if (err instanceof UsageError) {
    io.stderr.write(`conclave: ${inert(err.message)}\nRun \`npx conclave --help\` for the commands and options.\n`);
    return 2;
  }
  if (isConclaveError(err)) {
    // Messages can quote a model's reply or a server's error text.
    io.stderr.write(`conclave: ${inert(err.message)}\n`);
    if (err.hint) io.stderr.write(`  ${inert(err.hint)}\n`);
    if (debug && err.stack) io.stderr.write(`${inert(err.stack)}\n`);
    return err.exitCode;
  }
  // Anything else is a bug in Conclave, not something the user did.
  const e = err as Error;
  io.stderr.write(`conclave: internal error: ${inert(e?.message ?? String(err))}\n`);
  io.stderr.write(debug && e?.stack ? `${inert(e.stack)}\n` : '  Run again with --debug for the stack trace, and report it with that output.\n');
  return 70;
}
