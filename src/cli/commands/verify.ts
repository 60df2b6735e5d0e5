import type { CommandModule } from 'yargs';
import { InputError, IntegrityError } from '../../errors.js';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openDb } from '../shared.js';

interface VerifyArgs {
  id?: string;
  all?: boolean;
  db?: string;
  json?: boolean;
}

export function verifyCommand(io: CliIO, _exit: ExitCode): CommandModule<object, VerifyArgs> {
  return {
    command: 'verify [id]',
    describe: 'Recompute the hash chain and seal of stored debates; fail on any mismatch',
    builder: (y) =>
      y
        .positional('id', { type: 'string', describe: 'Debate id or a unique prefix of it' })
        .option('all', { type: 'boolean', describe: 'Verify every debate in the database' })
        .option('db', dbOption)
        .option('json', { type: 'boolean', describe: 'Print one JSON object per debate' }),
    handler: async (args) => {
      if ((args.id === undefined) === !args.all) {
        throw new InputError('VERIFY_TARGET', args.all ? 'Give either a debate id or --all, not both.' : 'Name the debate to verify.', {
          hint: 'Run `npx conclave verify ID`, or `npx conclave verify --all` for every debate.',
        });
      }
      const { describeBreak } = await import('../../store/bundle.js');
      const { inert, jsonText } = await import('../../render/inert.js');
      const store = await openDb(args.db, io, { readonly: true });
      try {
        const ids = args.all ? store.debateIds() : [store.resolveId(args.id!)];
        const broken: string[] = [];
        for (const id of ids) {
          const v = store.verifyDebate(id);
          if (args.json) {
            io.stdout.write(`${jsonText({ id, ...v })}\n`);
          } else {
            const calls = `${v.calls} call${v.calls === 1 ? '' : 's'}`;
            const line =
              v.state === 'sealed'
                ? `sealed    ${calls}, seal ${v.seal}`
                : v.state === 'unsealed'
                  ? `unsealed  ${calls} chained and intact; ${v.reason}`
                  : v.state === 'legacy'
                    ? `legacy    ${calls}, recorded before the hash chain: nothing to check`
                    : `BROKEN    ${describeBreak(v)}`;
            // Ids and row keys come from the file, which may have been edited by anyone.
            io.stdout.write(`${inert(`${id}  ${line}`)}\n`);
          }
          if (v.state === 'broken') broken.push(`\`${id}\` (${describeBreak(v)})`);
        }
        if (args.all && ids.length === 0) io.stderr.write(`No debates in ${store.path}.\n`);
        if (broken.length > 0) {
          throw new IntegrityError(
            'RECORD_TAMPERED',
            `${broken.length} of ${ids.length} debate${ids.length === 1 ? '' : 's'} in ${store.path} do${broken.length === 1 ? 'es' : ''} not match ${broken.length === 1 ? 'its' : 'their'} hashes: ${broken.join('; ')}.`,
            { hint: 'The record changed after it was written. Restore it from a backup or from a bundle exported earlier (`npx conclave import FILE`).' },
          );
        }
      } finally {
        store.close();
      }
    },
  };
}
