import type { CommandModule } from 'yargs';
import { InputError } from '../../errors.js';
import type { CliIO, ExitCode } from '../io.js';

interface SimArgs {
  port: number;
  script?: string;
  'num-parallel'?: number;
  'vram-gib'?: number;
  'load-ms'?: number;
  'token-ms'?: number;
  api?: 'ollama' | 'openai';
  'api-key-env'?: string;
}

export function simCommand(io: CliIO, _exit: ExitCode): CommandModule<object, SimArgs> {
  return {
    command: 'sim',
    describe: 'Start the Ollama-protocol simulator, to try presets and pipelines without a GPU',
    builder: (y) =>
      y
        .option('port', { type: 'number', default: 11434, describe: 'Port on 127.0.0.1 (0 picks a free one)' })
        .option('script', { type: 'string', describe: 'YAML/JSON script: models, replies, timings (see docs/simulator.md)' })
        .option('num-parallel', { type: 'number', describe: 'Parallel slots per model, like OLLAMA_NUM_PARALLEL (default 1)' })
        .option('vram-gib', { type: 'number', describe: 'Simulated GPU memory in GiB (default: unlimited)' })
        .option('load-ms', { type: 'number', describe: 'Model load time in ms' })
        .option('token-ms', { type: 'number', describe: 'Time per generated token in ms (default 15)' })
        .option('api', {
          choices: ['ollama', 'openai'] as const,
          describe: 'ollama (default): Ollama\'s API with its /v1 beside it; openai: only the OpenAI-compatible /v1, as vLLM or llama-server serve it (models stay loaded)',
        })
        .option('api-key-env', { type: 'string', describe: 'Require on /v1 the bearer key held by this environment variable, as `vllm serve --api-key` does' }),
    handler: async (args) => {
      const { startSimulator, loadSimScript } = await import('../../sim/index.js');
      const { demoResponder, simModelsFor } = await import('../../sim/demo.js');
      const { builtinPresetNames, loadPreset } = await import('../../config/load-preset.js');
      const presets = builtinPresetNames().map((n) => loadPreset(n).preset);
      const base = args.script ? await loadSimScript(args.script) : { models: simModelsFor(presets) };
      for (const [flag, value] of [['num-parallel', args['num-parallel']], ['vram-gib', args['vram-gib']]] as const) {
        if (value !== undefined && !(value > 0)) throw new InputError('BAD_FLAG', `--${flag} must be above 0; got ${Number.isNaN(value) ? 'something that is not a number' : value}.`);
      }
      const keyEnv = args['api-key-env'];
      const apiKey = keyEnv === undefined ? undefined : io.env[keyEnv]?.trim();
      if (keyEnv !== undefined && !apiKey) {
        throw new InputError('API_KEY_MISSING', `The environment variable ${keyEnv}, named by --api-key-env, is not set.`, { hint: `Export the key the simulator should require first: \`export ${keyEnv}=…\`.` });
      }
      // Built-in presets answer with the scripted demo panel unless the script gives replies.
      const sim = await startSimulator({
        tokenMs: 15,
        ...base,
        respond: base.respond ?? demoResponder(presets),
        port: args.port,
        ...(args['num-parallel'] ? { numParallel: args['num-parallel'] } : {}),
        ...(args['vram-gib'] ? { vramBytes: args['vram-gib'] * 1024 ** 3 } : {}),
        ...(args['load-ms'] !== undefined ? { loadMs: args['load-ms'] } : {}),
        ...(args['token-ms'] !== undefined ? { tokenMs: args['token-ms'] } : {}),
        ...(args.api ? { api: args.api } : {}),
        ...(apiKey ? { apiKey } : {}),
      }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE') {
          throw new InputError('PORT_IN_USE', `Port ${args.port} is already in use (is Ollama running?).`, { hint: 'Pick another with --port, e.g. --port 11500.' });
        }
        throw err;
      });
      const question = '"Should we migrate this tool from SQLite to Postgres now?" --preset tech-decision';
      io.stderr.write(`Conclave simulator listening on ${sim.url}${args.api === 'openai' ? '/v1 (OpenAI-compatible only)' : ' (Ollama, with OpenAI-compatible /v1)'} (Ctrl-C to stop)\n`);
      if (args.api === 'openai') io.stderr.write(`Try: conclave run ${question} --host ${sim.url}/v1 --api openai${keyEnv ? ` --api-key-env ${keyEnv}` : ''}\n`);
      else io.stderr.write(`Try: OLLAMA_HOST=${sim.url} conclave run ${question}\n`);
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          void sim.close().then(resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      const c = sim.counters();
      io.stderr.write(`Simulator stopped after ${c.requests} requests (${c.loads} loads, ${c.reloads} reloads, ${c.evictions} evictions).\n`);
    },
  };
}
