import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, signKeyOption } from '../shared.js';

interface McpArgs {
  db?: string;
  host?: string;
  hosts?: string;
  'sign-key'?: string;
  'allow-dir'?: string[];
  'trust-preset-hosts'?: boolean;
}

export function mcpCommand(io: CliIO, exit: ExitCode): CommandModule<object, McpArgs> {
  return {
    command: 'mcp',
    describe: 'Serve Conclave to coding agents over the Model Context Protocol (stdio)',
    builder: (y) =>
      y
        .option('db', dbOption)
        .option('host', { type: 'string', describe: 'Ollama URL for every debate (default: $OLLAMA_HOST, else http://127.0.0.1:11434)' })
        .option('hosts', { type: 'string', describe: 'YAML/JSON list of Ollama hosts {url, vramGiB?, numParallel?} to spread panels over' })
        .option('sign-key', signKeyOption)
        .option('allow-dir', { type: 'string', array: true, describe: 'A folder whose files clients may attach, and whose preset files they may use (repeatable; none by default)' })
        .option('trust-preset-hosts', { type: 'boolean', describe: "Let servers a preset names itself receive their API key from the environment and attached files" })
        .conflicts('host', 'hosts'),
    handler: async (args) => {
      // The SDK loads only here: other commands never pay for it.
      const { serveMcp } = await import('../../mcp/server.js');
      exit.value = await serveMcp(
        {
          ...(args.db === undefined ? {} : { db: args.db }),
          ...(args.host === undefined ? {} : { host: args.host }),
          ...(args.hosts === undefined ? {} : { hosts: args.hosts }),
          ...(args['sign-key'] === undefined ? {} : { signKey: args['sign-key'] }),
          allowDirs: (args['allow-dir'] ?? []).map(String),
          trustPresetHosts: args['trust-preset-hosts'] === true,
        },
        io,
      );
    },
  };
}
