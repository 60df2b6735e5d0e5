import type { CommandModule } from 'yargs';
import { InputError } from '../../errors.js';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, nonEmptyDb } from '../shared.js';

interface ServeArgs {
  db?: string;
  port: number;
  listen: string;
}

export const DEFAULT_VIEWER_PORT = 8421;

export function serveCommand(io: CliIO, _exit: ExitCode): CommandModule<object, ServeArgs> {
  return {
    command: 'serve',
    describe: 'Browse stored debates and bench runs in a local web page, and watch running debates live',
    builder: (y) =>
      y
        .option('db', dbOption)
        .option('port', { type: 'number', default: DEFAULT_VIEWER_PORT, describe: 'Port to listen on (0 picks a free one)' })
        .option('listen', {
          type: 'string',
          default: '127.0.0.1',
          describe: 'Address to listen on. Anything but loopback needs this flag and is guarded by a token printed at start',
        }),
    handler: async (args) => {
      const { resolve } = await import('node:path');
      const { randomBytes } = await import('node:crypto');
      const { defaultDbPath } = await import('../../store/open.js');
      const { openViewerStore } = await import('../../serve/store.js');
      const { createViewer, isLoopback } = await import('../../serve/server.js');
      if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) {
        throw new InputError('BAD_FLAG', `--port must be a whole number from 0 to 65535; got ${Number.isNaN(args.port) ? 'something that is not a number' : args.port}.`, { hint: 'Pick a free port, e.g. --port 8421, or 0 for any.' });
      }
      const listen = args.listen.trim();
      if (listen === '') throw new InputError('BAD_FLAG', '--listen needs an address; got an empty one.', { hint: 'Leave it out to stay on 127.0.0.1, or give e.g. --listen 0.0.0.0.' });
      const store = openViewerStore(args.db === undefined ? defaultDbPath(io.env) : resolve(io.cwd, nonEmptyDb(args.db, defaultDbPath(io.env))), (line) => io.stderr.write(`${line}\n`));
      const loopback = isLoopback(listen);
      const token = loopback ? null : randomBytes(24).toString('base64url');
      const viewer = createViewer({ store, token, log: (line) => io.stderr.write(`${line}\n`) });
      let base: string;
      try {
        base = await viewer.listen(args.port, listen.replace(/^\[|\]$/g, ''));
      } catch (err) {
        store.close();
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') throw new InputError('PORT_IN_USE', `Port ${args.port} on ${listen} is already in use.`, { hint: 'Pick another with --port, or --port 0 for any free one.', cause: err });
        if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EINVAL') {
          throw new InputError('BAD_LISTEN', `Cannot listen on \`${listen}\`: it is not an address of this machine.`, { hint: 'Give one of this machine\'s addresses, e.g. --listen 0.0.0.0 for all of them.', cause: err });
        }
        throw err;
      }
      if (!loopback) {
        io.stderr.write(
          `Warning: listening on ${listen}, beyond this machine. Anyone who can reach port ${args.port === 0 ? new URL(base).port : args.port} and holds the token can read every debate in ${store.path}.\n` +
            'Requests without the token are refused; traffic is plain HTTP, so use it on a network you trust.\n',
        );
      }
      io.stderr.write(`Conclave viewer for ${store.path} (read-only). Ctrl-C to stop.\n`);
      // Listening on every interface: print an address a colleague can open, not 0.0.0.0.
      const { reachableBases } = await import('../../serve/addresses.js');
      const { hostname, networkInterfaces } = await import('node:os');
      const [first, ...others] = reachableBases(listen, Number(new URL(base).port), networkInterfaces(), hostname());
      const tokenQuery = token ? `?token=${token}` : '';
      if (others.length > 0) io.stderr.write(`Also reachable at: ${others.map((b) => `${b}/${tokenQuery}`).join('  ')}\n`);
      io.stdout.write(`${first ?? base}/${tokenQuery}\n`);
      await new Promise<void>((done) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          void viewer.close().then(done);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      store.close();
    },
  };
}
