import yargs, { type CommandModule } from 'yargs';
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
import { hashProgressWriter } from './hash-progress.js';
import { onHashProgress } from '../embedded/file-hashes.js';
import { detectStyle } from '../render/style.js';
import { closest } from '../suggest.js';
import { report, UsageError } from './report.js';


/** Thrown after yargs has validated a command line, to stop before its handler runs. */
class ParsedOnly extends Error {}

/** Runs the CLI and resolves to the process exit code. Never throws. */
export async function main(given: string[], io: CliIO = processIO()): Promise<number> {
  // `--version` alone is the `version` command, as bin/conclave.js answers it (run from source, it reaches here).
  const argv = given.length === 1 && (given[0] === '--version' || given[0] === '-V') ? ['version'] : given;
  const exit = new ExitCode();
  const debug = argv.includes('--debug');
  onHashProgress(hashProgressWriter(io.stderr, detectStyle(io.stderr, io.env)));
  try {
    await cliParser(argv, io, exit).parseAsync();
    return exit.value;
  } catch (err) {
    const code = report(err, io, debug);
    // A line refused with --events still ends its output with the `end` line, as a run refused later does.
    if (err instanceof UsageError && EVENT_COMMANDS.has(argv[0] ?? '') && argv.includes('--events') && !argv.includes('--json')) {
      const { eventsWriter } = await import('../events/writer.js');
      eventsWriter(io.stdout).end('failed', code, err.message, null);
    }
    return code;
  }
}

/** The commands that take --events (docs/events.md). */
const EVENT_COMMANDS = new Set(['run', 'resume', 'synthesize', 'demo', 'bench']);

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

/** What yargs knows of the line being parsed, beyond its typed API: the options in force and the command names. */
interface YargsInternals {
  getOptions(): { key: Record<string, unknown> };
}

/**
 * yargs' message made into one a person can act on: an unknown command or flag, or a value
 * outside a flag's choices, gets the nearest known one, flags are named once (not also in camelCase), and the help to read is
 * the command's own.
 */
function usageError(msg: string, argv: readonly string[], known: Record<string, unknown>, commands: string[]): UsageError {
  const command = commands.includes(argv[0] ?? '') ? argv[0]! : null;
  const help = command ? `conclave ${command} --help` : 'conclave --help';
  if (/^Did you mean /.test(msg) || (/^Unknown argument: /.test(msg) && !command && argv[0] && !argv[0].startsWith('-'))) {
    const near = closest(argv[0] ?? '', commands);
    return new UsageError(`Unknown command \`${argv[0]}\`.${near ? ` Did you mean \`conclave ${near}\`?` : ''}`, 'conclave --help');
  }
  const unknown = /^Unknown arguments?: (.*)$/.exec(msg);
  if (unknown) {
    const names = unknown[1]!.split(', ');
    const flags = names.filter((n) => !/[A-Z]/.test(n) || !names.includes(n.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)));
    const options = Object.keys(known).filter((k) => !/[A-Z]/.test(k) && k.length > 1);
    const lines = flags.map((f) => {
      const near = closest(f, options);
      const dashes = f.length === 1 ? '-' : '--';
      return `Unknown option \`${dashes}${f}\`.${near ? ` Did you mean \`--${near}\`?` : ''}`;
    });
    return new UsageError(lines.join('\n'), help);
  }
  const values = [...msg.matchAll(/Argument: ([\w-]+), Given: "([^"]*)", Choices: (.*)/g)];
  if (values.length > 0) {
    const lines = values.map(([, flag, given, list]) => {
      const choices = [...list!.matchAll(/"([^"]*)"/g)].map((c) => c[1]!);
      const near = closest(given!, choices);
      return `--${flag} does not take \`${given}\`: it takes ${choices.map((c) => `\`${c}\``).join(', ')}.${near ? ` Did you mean \`--${flag} ${near}\`?` : ''}`;
    });
    return new UsageError(lines.join('\n'), help);
  }
  return new UsageError(msg, help);
}

function cliParser(argv: string[], io: CliIO, exit: ExitCode) {
  const commands = [
    runCommand(io, exit, argv),
    resumeCommand(io, exit),
    listCommand(io, exit),
    showCommand(io, exit),
    synthesizeCommand(io, exit),
    replayCommand(io, exit),
    exportCommand(io, exit),
    importCommand(io, exit),
    verifyCommand(io, exit),
    keysCommand(io, exit),
    modelsCommand(io, exit),
    hostsCommand(io, exit),
    presetsCommand(io, exit),
    simCommand(io, exit),
    demoCommand(io, exit),
    benchCommand(io, exit),
    rescoreCommand(io, exit),
    serveCommand(io, exit),
    mcpCommand(io, exit),
  ] as CommandModule<object, never>[];
  const names = [...commands.map((c) => String(c.command).split(' ')[0]!), 'completion', 'version'];
  let parser = yargs(argv)
    .scriptName('conclave')
    .usage('$0 <command> [options]\n\nStructured debates between local Ollama models, recorded in SQLite.');
  for (const c of commands) parser = parser.command(c);
  parser = parser
    .option('debug', { type: 'boolean', describe: 'Print stack traces for errors', global: true })
    .completion('completion', 'Print a bash/zsh completion script: `conclave completion >> ~/.bashrc` (or ~/.zshrc)')
    .recommendCommands()
    .demandCommand(1, 'Name a command, e.g. `conclave run "question" --preset tech-decision`.')
    .strict()
    .help()
    .alias('h', 'help')
    .version(false)
    .wrap(Math.min(100, io.stdout.columns ?? 100))
    .exitProcess(false)
    .fail((msg, err) => {
      if (err) throw err;
      // While a command's line is parsed, the parser holds that command's options.
      const inner = parser as unknown as YargsInternals;
      throw usageError(msg, argv, inner.getOptions().key, names);
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

