import { chmodSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { InputError, StoreError } from '../../errors.js';
import type { CliIO, ExitCode } from '../io.js';

interface KeysArgs {
  out?: string;
}

/** `$XDG_CONFIG_HOME/conclave`, else `~/.config/conclave`. */
function defaultKeyDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'conclave');
}

export function keysCommand(io: CliIO, _exit: ExitCode): CommandModule {
  return {
    command: 'keys <action>',
    describe: 'Make the Ed25519 key pair that signs seals (`keys init`)',
    builder: (y) =>
      y.command<KeysArgs>({
        command: 'init',
        describe: 'Write a new key pair: conclave-seal.key (private, mode 600) and conclave-seal.pub',
        builder: (b) => b.option('out', { type: 'string', describe: 'Folder for the two files (default: $XDG_CONFIG_HOME/conclave, else ~/.config/conclave)' }),
        handler: async (args) => {
          const { newKeyPair } = await import('../../store/signing.js');
          const dir = args.out ? resolve(io.cwd, args.out) : defaultKeyDir(io.env);
          const privateFile = join(dir, 'conclave-seal.key');
          const publicFile = join(dir, 'conclave-seal.pub');
          for (const f of [privateFile, publicFile]) {
            // A link counts, even one to nothing: the key would be written wherever it points.
            if (lexists(f)) {
              throw new InputError('KEY_EXISTS', `${f} already exists; a key pair is never overwritten.`, {
                hint: 'Keep using it, or pass --out with another folder for a new pair.',
              });
            }
          }
          const pair = newKeyPair();
          let wrote = false;
          try {
            mkdirSync(dir, { recursive: true, mode: 0o700 });
            writeFileSync(privateFile, pair.privateKeyPem, { mode: 0o600, flag: 'wx' });
            wrote = true;
            chmodSync(privateFile, 0o600);
            writeFileSync(publicFile, pair.publicKeyPem, { flag: 'wx' });
          } catch (err) {
            // Half a pair is none: a private key without its public half would block every later `keys init` here.
            if (wrote) rmSync(privateFile, { force: true });
            throw new StoreError('KEY_WRITE_FAILED', `Could not write the key pair to ${dir}: ${(err as Error).message}.`, {
              hint: 'Pass --out with a folder you may write to.',
            });
          }
          io.stdout.write(`${privateFile}\n${publicFile}\n`);
          io.stderr.write(
            `Key ${pair.keyId.slice(0, 16)} written. Sign seals with --sign-key ${privateFile} (or CONCLAVE_SIGNING_KEY); ` +
              `hand ${publicFile} to whoever checks them with \`conclave verify ID --public-key ${publicFile}\`. Keep the private key off the machine's shared disks.\n`,
          );
        },
      }).demandCommand(1, 'Name an action: `conclave keys init`.'),
    handler: () => undefined,
  };
}

/** Whether anything is at `path`, a link to nothing included (existsSync follows links). */
function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
