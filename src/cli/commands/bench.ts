import type { CommandModule } from 'yargs';
import { eventsOption } from '../events-args.js';
import type { CliIO, ExitCode } from '../io.js';
import type { BenchCompareArgs, BenchImportArgs, BenchListArgs, BenchReportArgs, BenchRunArgs } from '../bench-args.js';
import { dbOption } from '../shared.js';
import { apiOptions } from '../host-args.js';


export function benchCommand(io: CliIO, exit: ExitCode): CommandModule<object, object> {
  return {
    command: 'bench',
    describe: 'Benchmark presets on a suite: debate against single agents, self-consistency and votes at matched compute',
    builder: (y) =>
      y
        .command<BenchRunArgs>(
          '$0',
          'Run a suite (or resume a run) and print accuracy per condition',
          (b) =>
            b
              .option('suite', { type: 'string', describe: 'Built-in suite (`arithmetic`) or a JSONL suite file' })
              .option('preset', { alias: 'p', type: 'string', array: true, describe: 'Preset name or file; repeat to compare presets' })
              .option('resume', { type: 'string', describe: 'Continue an interrupted run by id (skips finished items)' })
              .option('limit', { type: 'number', describe: 'Use only the first N items of the suite' })
              .option('seed', { type: 'number', describe: 'Seed of the bootstrap intervals (default 0)' })
              .option('concurrency', { type: 'number', describe: 'Items in flight at once (default 1)' })
              .option('num-parallel', { type: 'number', describe: "Calls in flight per model: the server's OLLAMA_NUM_PARALLEL (default 1)" })
              .option('think', { choices: ['on', 'off'] as const, array: true, describe: 'Run each preset with thinking on or off for every role; `--think on --think off` compares both in one run' })
              .option('host', { type: 'string', describe: 'Server URL: Ollama (default: $OLLAMA_HOST, else http://127.0.0.1:11434), or with --api openai an OpenAI-compatible /v1 base' })
              .options(apiOptions)
              .option('hosts', { type: 'string', describe: 'YAML/JSON list of hosts (Ollama and OpenAI-compatible) to spread the calls over' })
              .conflicts('host', 'hosts')
              .option('db', dbOption)
              .option('dry-run', { type: 'boolean', describe: "Print the calls per preset and token and time estimates from the hosts' facts; call no model, record nothing" })
              .option('fail-under', { type: 'string', array: true, describe: 'CONDITION=ACCURACY (0..1 or N%), repeatable: exit 7 when that condition of any preset scores below it (a CI gate)' })
              .option('json', { type: 'boolean', describe: 'Print the full report as JSON on stdout at the end' })
              .option('events', eventsOption)
              .conflicts('events', 'json')
              .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress on stderr' }),
          async (args) => {
            const { benchRunFromCli } = await import('../bench-cli.js');
            exit.value = await benchRunFromCli(args, io);
          },
        )
        .command<BenchReportArgs>(
          'report <run>',
          'Report of a bench run as Markdown, JSON or an offline HTML page',
          (b) =>
            b
              .positional('run', { type: 'string', demandOption: true, describe: 'Bench run id (or a unique prefix)' })
              .option('format', { choices: ['md', 'json', 'html'] as const, default: 'md' as const, describe: 'Output format' })
              .option('out', { type: 'string', describe: 'Write to this file instead of stdout' })
              .option('db', dbOption),
          async (args) => {
            const { benchReportFromCli } = await import('../bench-cli.js');
            exit.value = await benchReportFromCli(args, io);
          },
        )
        .command<BenchCompareArgs>(
          'compare <a> <b>',
          'Compare two bench runs condition by condition on their shared items',
          (b) =>
            b
              .positional('a', { type: 'string', demandOption: true, describe: 'First run id (A)' })
              .positional('b', { type: 'string', demandOption: true, describe: 'Second run id (B)' })
              .option('format', { choices: ['md', 'json'] as const, default: 'md' as const, describe: 'Output format' })
              .option('db', dbOption),
          async (args) => {
            const { benchCompareFromCli } = await import('../bench-cli.js');
            exit.value = await benchCompareFromCli(args, io);
          },
        )
        .command<BenchImportArgs>(
          'import <kind> <file>',
          'Convert a GSM8K JSONL or MMLU CSV file into a suite (JSONL)',
          (b) =>
            b
              .positional('kind', { choices: ['gsm8k', 'mmlu'] as const, demandOption: true, describe: 'Format of the file' })
              .positional('file', { type: 'string', demandOption: true, describe: 'GSM8K .jsonl or MMLU .csv file' })
              .option('out', { type: 'string', describe: 'Suite file to write (default: stdout)' }),
          async (args) => {
            const { benchImportFromCli } = await import('../bench-cli.js');
            exit.value = await benchImportFromCli(args, io);
          },
        )
        .command<BenchListArgs>(
          'list',
          'List bench runs, newest first',
          (b) => b.option('db', dbOption).option('json', { type: 'boolean', describe: 'Print JSON' }),
          async (args) => {
            const { benchListFromCli } = await import('../bench-cli.js');
            exit.value = await benchListFromCli(args, io);
          },
        ),
    handler: () => {},
  };
}
