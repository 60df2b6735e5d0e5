import type { CommandModule } from 'yargs';
import { type CliIO, type ExitCode } from '../io.js';
import { dbOption, type MaterialArgs, materialOf, materialOptions, signKeyOption } from '../shared.js';
import { apiOptions } from '../host-args.js';
import { eventsOption, showThinkingOption } from '../events-args.js';

interface RunArgs extends MaterialArgs {
  question?: string;
  'question-file'?: string;
  preset: string;
  host?: string;
  db?: string;
  'sign-key'?: string;
  'max-rounds'?: number;
  agent?: string[];
  'dry-run'?: boolean;
  threshold?: number;
  'num-parallel'?: number;
  'vram-gib'?: number;
  hosts?: string;
  json?: boolean;
  events?: boolean;
  'show-thinking'?: boolean;
  quiet?: boolean;
}

export function runCommand(io: CliIO, exit: ExitCode, argv: readonly string[] = []): CommandModule<object, RunArgs> {
  return {
    command: 'run [question]',
    describe: 'Run a debate and print the final card',
    builder: (y) =>
      y
        .positional('question', { type: 'string', describe: 'The question to debate; `-` reads it from standard input' })
        .option('question-file', { type: 'string', describe: 'Read the question from this UTF-8 text file' })
        .option('preset', { alias: 'p', type: 'string', demandOption: true, describe: 'Preset name (see `conclave presets`) or path to a YAML/JSON file' })
        .option('host', { type: 'string', describe: 'Server URL: Ollama (default: $OLLAMA_HOST, else http://127.0.0.1:11434), or with --api openai an OpenAI-compatible /v1 base' })
        .options(apiOptions)
        .option('db', dbOption)
        .option('sign-key', signKeyOption)
        .option('protocol', {
          choices: ['debate', 'parallel', 'tournament', 'decompose', 'pipeline', 'oxford', 'delphi', 'auto'] as const,
          describe: "The protocol to run, over the preset's kind; auto lets the advisor model choose (docs/orchestration.md)",
        })
        .option('agent', { type: 'string', array: true, describe: "ID=MODEL: this agent answers with MODEL for this run (repeatable; recorded in the preset snapshot)" })
        .option('max-rounds', { type: 'number', describe: 'Critique rounds after round 0 (overrides the preset)' })
        .option('threshold', { type: 'number', describe: 'Convergence threshold for early exit, 0..1 (overrides the preset)' })
        .option('num-parallel', { type: 'number', describe: "Calls in flight per model: the server's OLLAMA_NUM_PARALLEL (default 1)" })
        .option('vram-gib', { type: 'number', describe: 'GPU memory of the host in GiB (default: nvidia-smi for a local host, else assumed 16)' })
        .option('hosts', { type: 'string', describe: 'YAML/JSON list of Ollama hosts {url, vramGiB?, numParallel?} to spread the panel over' })
        .option('trust-preset-hosts', { type: 'boolean', describe: "Let servers the preset names itself receive their API key from the environment and the preset's attachments" })
        .options(materialOptions)
        .option('dry-run', { type: 'boolean', describe: 'Print the plan, the calls, and token and time estimates from the hosts\' facts; call no model, record nothing' })
        .option('json', { type: 'boolean', describe: 'Print the whole debate as one JSON object on stdout' })
        .option('events', eventsOption)
        .conflicts('events', 'json')
        .option('show-thinking', showThinkingOption)
        .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress on stderr' }),
    handler: async (args) => {
      const { runFromCli } = await import('../run-debate-cli.js');
      // yargs hands a lone `-` over as an empty string: the command line tells which it was.
      const question = args.question === '' && argv.includes('-') ? '-' : args.question;
      exit.value = await runFromCli({ ...args, ...materialOf(args), ...(question === undefined ? {} : { question }) }, io);
    },
  };
}
