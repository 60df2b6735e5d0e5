import { NODE_LLAMA_CPP_VERSION } from '../embedded/engine.js';
import { loadHostsFile } from '../config/load-hosts.js';
import { loadPreset } from '../config/load-preset.js';
import type { HostEntry } from '../config/preset-schema.js';
import { HostError, InputError } from '../errors.js';
import { type HostArgs, singleHost } from './host-args.js';
import { formatTable } from '../render/table.js';
import { connect, serverUrl } from '../backend/connect.js';
import { gatherHostFacts, probeParallel } from '../schedule/facts.js';
import { DebateScheduler, validateHostEntries } from '../schedule/scheduler.js';
import type { CliIO } from './io.js';
import { inert, inertLine, jsonText } from '../render/inert.js';

export interface HostsCliArgs extends HostArgs {
  hosts?: string;
  'vram-gib'?: number;
  'num-parallel'?: number;
  preset?: string;
  probe?: string | boolean;
  model?: string;
  json?: boolean;
}

const gb = (n: number): string => `${(n / 1e9).toFixed(1)} GB`;

export async function showHosts(args: HostsCliArgs, io: CliIO): Promise<number> {
  // Host URLs, versions, model names and errors come from the servers.
  const writeOut = (text: string): boolean => io.stdout.write(inert(text));
  const entries: HostEntry[] = args.hosts
    ? loadHostsFile(args.hosts, io.cwd)
    : [
        {
          ...singleHost(args, io.env, io.cwd),
          ...(args['vram-gib'] !== undefined ? { vramGiB: args['vram-gib'] } : {}),
          ...(args['num-parallel'] !== undefined ? { numParallel: args['num-parallel'] } : {}),
        },
      ];
  validateHostEntries(entries);
  const facts = await Promise.all(entries.map((e) => gatherHostFacts(e, [], { env: io.env })));

  if (args.probe) {
    const results = [];
    for (const f of facts) {
      if (!f.ok) throw new HostError(f.errorCode ?? 'HOST_UNREACHABLE', `Cannot reach ${f.url}: ${inertLine(f.error ?? 'no answer')}`, { hint: f.errorHint ?? 'Start it with `ollama serve`.' });
      const model = args.model ?? [...f.models].sort((a, b) => a.size - b.size)[0]?.name;
      if (!model) throw new InputError('NO_MODEL', `${f.url} has no models to probe with.`, { hint: 'Pull a small model, e.g. `ollama pull qwen2.5:0.5b`.' });
      const entry = entries.find((e) => f.url === serverUrl(e));
      const r = await probeParallel(connect(entry ?? { url: f.url, api: f.api }, io.env), model, 4);
      results.push({ url: f.url, ...r });
      if (!args.json) {
        writeOut(
          `${f.url}: ${r.overlap} of ${r.requests} overlapping requests to ${inertLine(model)} generated at once → numParallel ${r.overlap}` +
            (r.overlap === 1 ? ' (requests are served one at a time: OLLAMA_NUM_PARALLEL=1)\n' : '\n'),
        );
      }
    }
    if (args.json) writeOut(`${jsonText(results, 2)}\n`);
    return 0;
  }

  let planWarnings: string[] = [];
  if (args.preset) {
    const { preset } = loadPreset(args.preset, io.cwd);
    const { presetModels } = await import('../engine/run-debate.js');
    const debaters = new Set(preset.agents.map((a) => a.model));
    const scheduler = await DebateScheduler.prepare({
      hosts: entries,
      debaters: preset.agents.map((a) => a.model),
      // What the preset's protocol calls besides the panel: judge, synthesizer, stage models.
      support: presetModels(preset).filter((m) => !debaters.has(m)),
      contextNeeds: {},
      explicitNumCtx: {},
    });
    planWarnings = scheduler.plan.warnings;
  }

  if (args.json) {
    writeOut(`${jsonText({ hosts: facts, warnings: planWarnings }, 2)}\n`);
  } else {
    for (const f of facts) {
      if (!f.ok) {
        // A host that answers with an error (a proxy's 502) is reached, but not usable.
        writeOut(`${f.url}: ${f.errorCode === undefined || f.errorCode === 'HOST_UNREACHABLE' ? 'unreachable' : 'not usable'} (${inertLine(f.error ?? 'no answer')})\n\n`);
        continue;
      }
      const slots = `${f.numParallel} slot${f.numParallel === 1 ? '' : 's'} per model (${f.numParallelSource})`;
      if (f.api === 'openai') {
        writeOut(`${f.url} · OpenAI-compatible${f.apiKeyEnv ? ` · key from $${f.apiKeyEnv}` : ''} · manages its own memory · ${slots}\n`);
        writeOut(formatTable(['model', 'context'], f.models.map((m) => [m.name, f.details[m.name]?.contextLength ? String(f.details[m.name]!.contextLength) : '-'])));
        writeOut('\n');
        continue;
      }
      if (f.api === 'embedded') {
        writeOut(`${f.url} · embedded ${f.version ?? `node-llama-cpp ${NODE_LLAMA_CPP_VERSION}`} · one model loaded at a time · ${slots}\n`);
        writeOut(formatTable(['model', 'size', 'context', 'sha256'], f.models.map((m) => [m.name, gb(m.size), f.details[m.name]?.contextLength ? String(f.details[m.name]!.contextLength) : '-', m.digest.slice(0, 12)])));
        writeOut('\n');
        continue;
      }
      // The version is the server's own text: one line, whatever it holds.
      writeOut(`${f.url} · Ollama ${inertLine(f.version ?? 'unknown')} · GPU ${(f.vramBytes / 2 ** 30).toFixed(0)} GiB (${f.vramSource}) · ${slots}\n`);
      writeOut(
        formatTable(
          ['model', 'size', 'context', 'KV/token', 'loaded', 'in VRAM'],
          f.models.map((m) => {
            const d = f.details[m.name];
            const loaded = f.loaded.find((l) => l.name === m.name);
            return [
              m.name,
              gb(m.size),
              d?.contextLength ? String(d.contextLength) : '-',
              d?.kvBytesPerToken ? `${Math.round(d.kvBytesPerToken / 1024)} KiB` : '-',
              loaded ? 'yes' : '',
              loaded ? `${Math.round((loaded.sizeVram / Math.max(1, loaded.size)) * 100)}%` : '',
            ];
          }),
        ),
      );
      writeOut('\n');
    }
    for (const w of planWarnings) writeOut(`warning: ${w}\n`);
  }
  return facts.every((f) => f.ok) ? 0 : 3;
}
