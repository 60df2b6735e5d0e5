import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openDb, signKeyOption } from '../shared.js';
import { eventsOption, showThinkingOption } from '../events-args.js';
import { type HostArgs, apiOptions, checkRecordedHosts, recordedHostOf, singleHost, trustRecordedHostsOption } from '../host-args.js';

interface SynthesizeArgs extends HostArgs {
  'sign-key'?: string;
  'trust-recorded-hosts'?: boolean;
  id: string;
  model?: string;
  db?: string;
  json?: boolean;
  events?: boolean;
  'show-thinking'?: boolean;
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
        .option('events', eventsOption)
        .conflicts('events', 'json')
        .option('show-thinking', showThinkingOption)
        .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress on stderr' }),
    handler: async (args) => {
      const { resynthesize } = await import('../../engine/resynthesize.js');
      const { exitCodeOf } = await import('../../events/exit-code.js');
      const { renderCard } = await import('../../render/card.js');
      const { debateDocument } = await import('../../render/document.js');
      const { detectStyle } = await import('../../render/style.js');
      const { unsynthesized, endBeforeStart } = await import('../run-debate-cli.js');
      const { synthesisListeners } = await import('../synthesize-live.js');
      let store: Awaited<ReturnType<typeof openDb>>;
      try {
        store = await openDb(args.db, io, args['sign-key'] ? { signKey: args['sign-key'] } : {});
      } catch (err) {
        if (args.events) endBeforeStart(io, err);
        throw err;
      }
      let id: string | null = null;
      let hear: ReturnType<typeof synthesisListeners> | null = null;
      try {
        id = store.resolveId(args.id);
        // Refused before any model call: a record that does not verify, or a key that may not continue it.
        store.checkGate(id);
        const { checkRecordRows } = await import('../../store/row-check.js');
        checkRecordRows(store, id, 'synthesized');
        // The server the debate ran on, as `resume` does, unless --host (or --api) names another.
        const { synthesizerModel } = await import('../../config/synthesizer.js');
        const stored = args.host || args.api || args.embedded !== undefined ? null : store.getDebate(id);
        const recorded = stored ? recordedHostOf(stored.plan, args.model ?? synthesizerModel(stored.preset)) : null;
        if (recorded) checkRecordedHosts([recorded], args['trust-recorded-hosts'], 'synthesize');
        const target = recorded || singleHost(args, io.env, io.cwd);
        const host = target.url;
        // The synthesis streams on a terminal; with --events its calls are event lines.
        hear = synthesisListeners(io, id, { events: args.events === true, quiet: args.quiet === true, showThinking: args['show-thinking'] === true });
        const { record, debate } = await resynthesize({
          store,
          id,
          host: target,
          env: io.env,
          ...(args.model ? { model: args.model } : {}),
          ...(hear.listener ? { listener: hear.listener } : {}),
          onStart: (model, attempt) => {
            if (!args.quiet) hear?.say(`${attempt === 0 ? 'Synthesizing' : 'Asking again (the reply broke the schema)'}: debate ${id} with ${model} on ${host}…\n`);
          },
        });
        hear.close();
        const code = record.status === 'ok' ? 0 : 5;
        if (hear.events) hear.events.end(debate.status, code, record.status === 'ok' ? null : unsynthesized(id, record.error).message);
        else if (args.json) io.stdout.write(`${JSON.stringify(debateDocument(debate), null, 2)}\n`);
        else io.stdout.write(renderCard(debate, detectStyle(io.stdout, io.env)));
        if (record.status !== 'ok') throw unsynthesized(id, record.error);
        exit.value = 0;
      } catch (err) {
        hear?.close();
        const events = hear?.events;
        if (args.events && !events) endBeforeStart(io, err, id);
        else if (events && !events.ended()) events.end('failed', exitCodeOf(err), err instanceof Error ? err.message : String(err));
        throw err;
      } finally {
        store.close();
      }
    },
  };
}
