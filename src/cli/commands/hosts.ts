import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { apiOptions } from '../host-args.js';

interface HostsArgs {
  host?: string;
  hosts?: string;
  'vram-gib'?: number;
  'num-parallel'?: number;
  preset?: string;
  probe?: string;
  model?: string;
  json?: boolean;
}

export function hostsCommand(io: CliIO, exit: ExitCode): CommandModule<object, HostsArgs> {
  return {
    command: 'hosts [probe]',
    describe: 'Show what each Ollama host serves and can hold (`hosts probe` measures parallel slots)',
    builder: (y) =>
      y
        .positional('probe', { type: 'string', choices: ['probe'], describe: 'Measure parallel slots with overlapping one-line requests' })
        .option('host', { type: 'string', describe: 'Server URL: Ollama (default: $OLLAMA_HOST, else http://127.0.0.1:11434), or with --api openai an OpenAI-compatible /v1 base' })
        .options(apiOptions)
        .option('hosts', { type: 'string', describe: 'YAML/JSON list of hosts {url, vramGiB?, numParallel?}' })
        .option('vram-gib', { type: 'number', describe: 'GPU memory of --host in GiB' })
        .option('num-parallel', { type: 'number', describe: 'OLLAMA_NUM_PARALLEL of --host' })
        .option('preset', { alias: 'p', type: 'string', describe: 'Plan this preset on the hosts and show the warnings' })
        .option('model', { type: 'string', describe: 'Model to probe with (default: the smallest on the host)' })
        .option('json', { type: 'boolean', describe: 'Print JSON' }),
    handler: async (args) => {
      const { showHosts } = await import('../hosts-cli.js');
      exit.value = await showHosts(args, io);
    },
  };
}
