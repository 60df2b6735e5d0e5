import type { CommandModule } from 'yargs';
import { IntegrityError, InputError } from '../../errors.js';
import { type CliIO, type ExitCode, tellUser } from '../io.js';
import { dbOption, openDb, signKeyOption } from '../shared.js';
import type { HostEntry } from '../../config/preset-schema.js';
import type { PlannedHost } from '../../schedule/plan.js';
import { type HostArgs, apiOptions, checkRecordedHosts, singleHost, trustRecordedHostsOption } from '../host-args.js';
import { eventsOption, showThinkingOption } from '../events-args.js';
import { embeddedDir } from '../../backend/url.js';

interface ResumeArgs extends HostArgs {
  'sign-key'?: string;
  'trust-recorded-hosts'?: boolean;
  id: string;
  db?: string;
  json?: boolean;
  events?: boolean;
  'show-thinking'?: boolean;
  quiet?: boolean;
}

export function resumeCommand(io: CliIO, exit: ExitCode): CommandModule<object, ResumeArgs> {
  return {
    command: 'resume <id>',
    describe: 'Go on with an interrupted debate from its last complete round, reusing everything recorded',
    builder: (y) =>
      y
        .positional('id', { type: 'string', demandOption: true, describe: 'Debate id or a unique prefix of it' })
        .option('host', { type: 'string', describe: 'Server URL (default: the debate\'s own hosts, else OLLAMA_HOST)' })
        .options(apiOptions)
        .option('trust-recorded-hosts', trustRecordedHostsOption)
        .option('db', dbOption)
        .option('sign-key', signKeyOption)
        .option('json', { type: 'boolean', describe: 'Print the whole debate as JSON when it ends' })
        .option('events', eventsOption)
        .conflicts('events', 'json')
        .option('show-thinking', showThinkingOption)
        .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress on stderr' }),
    handler: async (args) => {
      const { resumeDebate, planResume } = await import('../../engine/resume.js');
      const { resolveHost } = await import('../../ollama/host.js');
      const { driveFromCli, endBeforeStart } = await import('../run-debate-cli.js');
      const store = await openDb(args.db, io, args['sign-key'] ? { signKey: args['sign-key'] } : {});
      let handedOver = false;
      try {
        const id = store.resolveId(args.id);
        // Go on only from a record that is what it was, with the key that signed it: the new calls chain onto it.
        // Checked before the record is read, so a hand-edited row is named rather than met as an internal error.
        store.checkGate(id);
        // A record sealed again after an edit verifies: a value Conclave never writes is named here, not met half-way through the run.
        const { checkRecordRows } = await import('../../store/row-check.js');
        checkRecordRows(store, id, 'resumed');
        const stored = store.getDebate(id);
        const plan = planResume(stored);
        // The hosts and slots the debate ran with, unless --host names another server.
        const ran = (stored.plan as { hosts?: PlannedHost[] } | null)?.hosts ?? [];
        const slots = ran[0]?.numParallel;
        const hosts: HostEntry[] = args.host || args.embedded !== undefined
          ? [{ ...singleHost(args, io.env, io.cwd), ...(slots ? { numParallel: slots } : {}) }]
          : ran.map((h) =>
              h.api === 'embedded'
                ? { url: h.url, api: 'embedded', models: embeddedDir(h.url), numParallel: h.numParallel }
                : h.api === 'openai'
                ? { url: h.url, api: 'openai', numParallel: h.numParallel, ...(h.apiKeyEnv ? { apiKeyEnv: h.apiKeyEnv } : {}) }
                : { url: h.url, vramGiB: h.vramBytes / 2 ** 30, numParallel: h.numParallel },
            );
        if (!args.host && args.embedded === undefined) checkRecordedHosts(hosts, args['trust-recorded-hosts'], 'resume');
        const host = hosts[0]?.url ?? resolveHost(undefined, io.env);
        if (!args.quiet) {
          const from = plan.point.fromRound < 0 ? 'from the start (no round was complete)' : `after round ${plan.point.fromRound}, reusing ${stored.calls.length} recorded calls`;
          const done = [...plan.recorded.keys()];
          const partial = done.length > 0 ? `; in round ${plan.point.fromRound + 1}, ${done.join(', ')} answered already and ${done.length === 1 ? 'is' : 'are'} not asked again` : '';
          tellUser(io, `Resuming ${id} ${from}${partial}.\n\n`);
        }
        handedOver = true;
        exit.value = await driveFromCli(io, store, args, (hooks) => resumeDebate(stored, { ...hooks, host, env: io.env, ...(hosts.length > 0 ? { hosts } : {}) }, plan), plan.point);
      } catch (err) {
        if (args.events && !handedOver) endBeforeStart(io, err);
        throw err;
      } finally {
        if (!handedOver) store.close();
      }
    },
  };
}
