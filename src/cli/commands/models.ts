import type { CommandModule } from 'yargs';
import { inert, jsonText } from '../../render/inert.js';
import { type HostArgs, apiOptions, singleHost } from '../host-args.js';
import { plural } from '../../plural.js';
import { type CliIO, type ExitCode, tellUser } from '../io.js';

interface ModelsArgs extends HostArgs {
  hosts?: string;
  preset?: string;
  json?: boolean;
}

export function modelsCommand(io: CliIO, exit: ExitCode): CommandModule<object, ModelsArgs> {
  return {
    command: 'models',
    describe: 'List the models each host serves, and which models a preset needs that none of them has',
    builder: (y) =>
      y
        .option('host', { type: 'string', describe: 'Server URL: Ollama (default: $OLLAMA_HOST, else http://127.0.0.1:11434), or with --api openai an OpenAI-compatible /v1 base' })
        .options(apiOptions)
        .option('hosts', { type: 'string', describe: 'YAML/JSON list of hosts (Ollama and OpenAI-compatible) to list together' })
        .conflicts('host', 'hosts')
        .option('preset', { alias: 'p', type: 'string', describe: 'Check this preset against the hosts' })
        .option('json', { type: 'boolean', describe: 'Print JSON' }),
    handler: async (args) => {
      const writeOut = (text: string): boolean => io.stdout.write(inert(text));
      const { connect } = await import('../../backend/connect.js');
      const { CallError } = await import('../../backend/types.js');
      const { HostError } = await import('../../errors.js');
      const { missingModels, presetModels } = await import('../../engine/run-debate.js');
      const { loadPreset } = await import('../../config/load-preset.js');
      const { validateHostEntries } = await import('../../schedule/scheduler.js');
      const { agentFamily, oneFamilyWarning } = await import('../../schedule/families.js');
      const { sameModel } = await import('../../schedule/facts.js');
      // From the listed tags (Ollama's carry the family /api/show reports), else the preset's `family:`.
      const panelFamilies = (p: NonNullable<typeof preset>, all: typeof tags) => p.agents.map((a) => agentFamily(a, undefined, all.find((t) => sameModel(t.name, a.model))));
      const preset = args.preset ? loadPreset(args.preset, io.cwd).preset : null;
      const entries = args.hosts ? (await import('../../config/load-hosts.js')).loadHostsFile(args.hosts, io.cwd) : [singleHost(args, io.env, io.cwd)];
      validateHostEntries(entries);
      const servers = entries.map((e) => connect(e, io.env));
      // A folder of .gguf files is listed with each file's sha256, read in full the first time: on large files that takes a while.
      for (const s of servers.filter((x) => x.api === 'embedded')) {
        tellUser(io, `Listing ${s.host}: each .gguf file not named by its sha256 (an Ollama blob is) is read in full to compute it the first time, about a second per GB, and remembered for later runs…\n`);
      }
      const listed = await Promise.all(
        servers.map(async (server) => {
          try {
            return { server, tags: await server.tags(), error: null };
          } catch (err) {
            if (!(err instanceof CallError)) throw err;
            // One host alone: its failure is the command's. In a list, the others are still worth listing.
            if (servers.length === 1) throw new HostError(err.code, err.message, { ...(err.hint ? { hint: err.hint } : {}), cause: err });
            return { server, tags: [], error: err };
          }
        }),
      );
      const tags = listed.flatMap((l) => l.tags);
      const missing = preset ? missingModels(preset, tags) : [];
      const kind = (api: string): string => (api === 'openai' ? 'OpenAI-compatible' : api === 'embedded' ? 'embedded (GGUF files run in this process)' : 'Ollama');
      if (args.json) {
        const one = (l: (typeof listed)[number]) => ({ host: l.server.host, api: l.server.api, models: l.tags, ...(l.error ? { error: l.error.message } : {}) });
        const hosts = args.hosts ? { hosts: listed.map(one) } : one(listed[0]!);
        writeOut(`${jsonText({ ...hosts, ...(preset ? { preset: preset.name, needs: presetModels(preset), missing, families: panelFamilies(preset, tags) } : {}) }, 2)}\n`);
      } else {
        const { formatTable } = await import('../../render/table.js');
        for (const [i, l] of listed.entries()) {
          writeOut(`${i > 0 ? '\n' : ''}${l.server.host} · ${kind(l.server.api)}\n`);
          if (l.error) {
            writeOut(`  unavailable: ${l.error.message}\n`);
            continue;
          }
          writeOut(
            formatTable(
              ['model', 'family', 'size', 'params', 'quant', 'digest'],
              l.tags.map((t) => [t.name, t.family ?? '-', t.size > 0 ? `${(t.size / 1e9).toFixed(1)} GB` : '-', t.parameterSize ?? '-', t.quantization ?? '-', t.digest === '' ? '-' : t.digest.slice(0, 12)]),
              [2, 3],
            ),
          );
        }
        if (preset) {
          writeOut(`\nPanel of ${preset.name}: ${panelFamilies(preset, tags).map((f) => `${f.agentId} ${f.family ?? 'unknown'}${f.source === 'preset' ? ' (preset)' : ''}`).join(' · ')}\n`);
          const oneFamily = oneFamilyWarning(panelFamilies(preset, tags));
          if (oneFamily) writeOut(`warning: ${oneFamily}\n`);
          if (missing.length === 0) writeOut(`\nPreset ${preset.name}: ${presetModels(preset).length === 1 ? 'its one model is' : `all ${plural(presetModels(preset).length, 'model')} are`} present.\n`);
          else if (servers.every((g) => g.api === 'ollama') && servers.length === 1) writeOut(`\nPreset ${preset.name} needs models this host lacks:\n${formatTable(['model', 'to fetch it'], missing.map((m) => [m, `ollama pull ${m}`])).trimEnd().replace(/^/gm, '  ')}\n`);
          else writeOut(`\nPreset ${preset.name} needs models no host serves:\n${missing.map((m) => `  ${m}`).join('\n')}\n`);
          if (missing.length > 0) io.stderr.write(`Exit 3: the preset needs ${missing.length === 1 ? 'a model' : plural(missing.length, 'model')} missing here (a CI step can gate on it).\n`);
        }
      }
      if (missing.length > 0 || listed.some((l) => l.error)) exit.value = 3;
    },
  };
}
