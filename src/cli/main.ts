import yargs from 'yargs';
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
import { rescoreCommand } from './commands/rescore.js';
import { resumeCommand } from './commands/resume.js';
import { runCommand } from './commands/run.js';
import { serveCommand } from './commands/serve.js';
import { showCommand } from './commands/show.js';
import { simCommand } from './commands/sim.js';
import { synthesizeCommand } from './commands/synthesize.js';
import { verifyCommand } from './commands/verify.js';
import { type CliIO, ExitCode, processIO } from './io.js';
import { report, UsageError } from './report.js';


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

/** The arguments yargs hands a command's handler for this line (tests compare the fast path with it); null when it refuses the line. */
export async function parsedCommandLine(argv: string[], io: CliIO = processIO()): Promise<Record<string, unknown> | null> {
  let seen: Record<string, unknown> | null = null;
  const parser = cliParser(argv, io, new ExitCode()).middleware((args) => {
    seen = { ...args };
    throw new ParsedOnly();
  });
  try {
    await parser.parseAsync();
  } catch (err) {
    if (err instanceof UsageError) return null;
    if (!(err instanceof ParsedOnly)) throw err;
  }
  return seen;
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
    .command(rescoreCommand(io, exit))
    .command(serveCommand(io, exit))
    .command(mcpCommand(io, exit))
    .option('debug', { type: 'boolean', describe: 'Print stack traces for errors', global: true })
    .demandCommand(1, 'Name a command, e.g. `conclave run "question" --preset tech-decision`.')
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
      const { ENGINE_VERSION } = await import('../version.js');
      io.stdout.write(`${ENGINE_VERSION}\n`);
    },
  );
  return parser;
}

