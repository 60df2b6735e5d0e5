import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, signKeyOption } from '../shared.js';

interface McpArgs {
  db?: string;
  host?: string;
  hosts?: string;
  'sign-key'?: string;
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
        },
        io,
      );
    },
  };
}
