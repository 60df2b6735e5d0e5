import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { inert, jsonText } from '../../render/inert.js';

interface ModelsArgs {
  host?: string;
  preset?: string;
  json?: boolean;
}

export function modelsCommand(io: CliIO, exit: ExitCode): CommandModule<object, ModelsArgs> {
  return {
    command: 'models',
    describe: 'List the models the host serves, and which models a preset needs that it lacks',
    builder: (y) =>
      y
        .option('host', { type: 'string', describe: 'Ollama URL (default: $OLLAMA_HOST, else http://127.0.0.1:11434)' })
        .option('preset', { alias: 'p', type: 'string', describe: 'Check this preset against the host' })
        .option('json', { type: 'boolean', describe: 'Print JSON' }),
    handler: async (args) => {
      const writeOut = (text: string): boolean => io.stdout.write(inert(text));
      const { resolveHost } = await import('../../ollama/host.js');
      const { Gateway, CallError } = await import('../../ollama/gateway.js');
      const { HostError } = await import('../../errors.js');
      const { missingModels, presetModels } = await import('../../engine/run-debate.js');
      const { loadPreset } = await import('../../config/load-preset.js');
      const preset = args.preset ? loadPreset(args.preset, io.cwd).preset : null;
      const gateway = new Gateway(resolveHost(args.host, io.env));
      let tags;
      try {
        tags = await gateway.tags();
      } catch (err) {
        if (err instanceof CallError) throw new HostError(err.code, err.message, { ...(err.hint ? { hint: err.hint } : {}), cause: err });
        throw err;
      }
      const missing = preset ? missingModels(preset, tags) : [];
      if (args.json) {
        writeOut(`${jsonText({ host: gateway.host, models: tags, ...(preset ? { preset: preset.name, needs: presetModels(preset), missing } : {}) }, 2)}\n`);
      } else {
        const { formatTable } = await import('../../render/table.js');
        writeOut(`${gateway.host}\n`);
        writeOut(
          formatTable(
            ['model', 'size', 'params', 'quant', 'digest'],
            tags.map((t) => [t.name, `${(t.size / 1e9).toFixed(1)} GB`, t.parameterSize ?? '-', t.quantization ?? '-', t.digest.slice(0, 12)]),
          ),
        );
        if (preset) {
          if (missing.length === 0) writeOut(`\nPreset ${preset.name}: all ${presetModels(preset).length} models are present.\n`);
          else writeOut(`\nPreset ${preset.name} needs models this host lacks:\n${missing.map((m) => `  ${m}    ollama pull ${m}`).join('\n')}\n`);
        }
      }
      if (missing.length > 0) exit.value = 3;
    },
  };
}
