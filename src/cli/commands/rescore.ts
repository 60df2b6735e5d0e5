import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import type { RescoreArgs } from '../bench-args.js';
import { dbOption } from '../shared.js';


export function rescoreCommand(io: CliIO, exit: ExitCode): CommandModule<object, RescoreArgs> {
  return {
    command: 'rescore <target>',
    describe: 'Re-decide a debate or a whole bench run under other stopping and aggregation rules, from the record alone',
    builder: (y) =>
      y
        .positional('target', { type: 'string', demandOption: true, describe: 'Debate id or bench run id (or a unique prefix of either)' })
        .option('rule', { type: 'string', array: true, describe: 'Only this rule (e.g. `majority:round0`, `stop:threshold@0.80`); repeatable' })
        .option('json', { type: 'boolean', describe: 'Print the figures as JSON' })
        .option('db', dbOption),
    handler: async (args) => {
      const { rescoreFromCli } = await import('../rescore-cli.js');
      exit.value = await rescoreFromCli(args, io);
    },
  };
}
