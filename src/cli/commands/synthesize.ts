import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openDb, signKeyOption } from '../shared.js';
import { type HostArgs, apiOptions, checkRecordedKeys, recordedHostOf, singleHost, trustRecordedHostsOption } from '../host-args.js';

interface SynthesizeArgs extends HostArgs {
  'sign-key'?: string;
  'trust-recorded-hosts'?: boolean;
  id: string;
  model?: string;
  db?: string;
  json?: boolean;
  quiet?: boolean;
}

export function synthesizeCommand(io: CliIO, exit: ExitCode): CommandModule<object, SynthesizeArgs> {
  return {
    command: 'synthesize <id>',
    describe: "Run a stored debate's synthesis again from its transcript (e.g. after it failed), as a new attempt",
    builder: (y) =>
      y
        .positional('id', { type: 'string', demandOption: true, describe: 'Debate id or a unique prefix of it' })
        .option('model', { type: 'string', describe: "Synthesizer model (default: the preset's)" })
        .option('host', { type: 'string', describe: "Server URL (default: the host the debate's synthesizer ran on, else $OLLAMA_HOST); with --api openai an OpenAI-compatible /v1 base" })
        .options(apiOptions)
        .option('trust-recorded-hosts', trustRecordedHostsOption)
        .option('db', dbOption)
        .option('sign-key', signKeyOption)
        .option('json', { type: 'boolean', describe: 'Print the whole debate as one JSON object on stdout' })
        .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress on stderr' }),
    handler: async (args) => {
      const { resynthesize } = await import('../../engine/resynthesize.js');
      const { renderCard } = await import('../../render/card.js');
      const { debateDocument } = await import('../../render/document.js');
      const { detectStyle } = await import('../../render/style.js');
      const { unsynthesized } = await import('../run-debate-cli.js');
      const store = await openDb(args.db, io, args['sign-key'] ? { signKey: args['sign-key'] } : {});
      try {
        const id = store.resolveId(args.id);
        // Refused before any model call: a record that does not verify, or a key that may not continue it.
        store.checkGate(id);
        // The server the debate ran on, as `resume` does, unless --host (or --api) names another.
        const { synthesizerModel } = await import('../../config/synthesizer.js');
        const stored = args.host || args.api || args.embedded !== undefined ? null : store.getDebate(id);
        const recorded = stored ? recordedHostOf(stored.plan, args.model ?? synthesizerModel(stored.preset)) : null;
        if (recorded) checkRecordedKeys([recorded], args['trust-recorded-hosts'], 'synthesize');
        const target = recorded || singleHost(args, io.env, io.cwd);
        const host = target.url;
        const { record, debate } = await resynthesize({
          store,
          id,
          host: target,
          env: io.env,
          ...(args.model ? { model: args.model } : {}),
          onStart: (model, attempt) => {
            if (!args.quiet) io.stderr.write(`${attempt === 0 ? 'Synthesizing' : 'Asking again (the reply broke the schema)'}: debate ${id} with ${model} on ${host}…\n`);
          },
        });
        if (args.json) io.stdout.write(`${JSON.stringify(debateDocument(debate), null, 2)}\n`);
        else io.stdout.write(renderCard(debate, detectStyle(io.stdout, io.env)));
        if (record.status !== 'ok') throw unsynthesized(id, record.error);
        exit.value = 0;
      } finally {
        store.close();
      }
    },
  };
}
