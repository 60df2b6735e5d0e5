import type { CommandModule } from 'yargs';
import { InputError, IntegrityError } from '../../errors.js';
import type { CliIO, ExitCode } from '../io.js';
import { dbOption, openDb, openRecordDb, validateBundleShape } from '../shared.js';
import { resolve } from 'node:path';
import type { Row, Verdict } from '../../store/chain.js';
import type { describeBreak as DescribeBreak } from '../../store/bundle.js';
import type { BenchVerdict } from '../../store/bench-seal.js';

/** One line per debate: its state, and what was checked. */
function describeVerdict(v: SignedVerdict, describeBreak: typeof DescribeBreak): string {
  const calls = `${v.calls} call${v.calls === 1 ? '' : 's'}`;
  const signed =
    'signedBy' in v && v.signedBy
      ? `, signed by key ${v.signedBy.slice(0, 16)}`
      : 'signed' in v && v.signed === false
        ? ', not signed'
        : 'claimedKey' in v && v.claimedKey
          ? `, signature of key ${v.claimedKey.slice(0, 16)} not checked (pass --public-key to check it)`
          : '';
  const adopted = 'adoptedAt' in v && v.adoptedAt !== undefined ? `; sealed as it stood when the file was upgraded, ${new Date(v.adoptedAt).toISOString().slice(0, 10)}: what it held before then cannot be checked` : '';
  return v.state === 'sealed'
    ? `sealed    ${calls}, seal ${v.seal}${signed}${adopted}`
    : v.state === 'unsealed'
      ? `unsealed  ${calls} chained and intact; ${v.reason}${signed}${adopted}`
      : `BROKEN    ${describeBreak(v)}`;
}

/**
 * A verdict from `verify --public-key`: `signed: false` for a seal that was never signed (which is not a break).
 * Without a key, `claimedKey`: the key a signed seal names, which only `--public-key` can check.
 */
type SignedVerdict = Verdict & { signed?: boolean; claimedKey?: string };

type BenchSignedVerdict = BenchVerdict & { signed?: boolean };

/** One line per bench run: its state, and what was checked. */
function describeBenchVerdict(v: BenchSignedVerdict, keyGiven: boolean): string {
  const trials = `${v.trials} trial${v.trials === 1 ? '' : 's'}`;
  if (v.state === 'broken') return `BROKEN    ${v.problem}`;
  if (v.state === 'unsealed') return `unsealed  ${trials}; ${v.reason}`;
  const signed = v.signed === true && v.signedBy ? `, signed by key ${v.signedBy.slice(0, 16)}` : v.signed === false ? ', not signed' : v.signedBy && !keyGiven ? `, signature of key ${v.signedBy.slice(0, 16)} not checked (pass --public-key to check it)` : '';
  const adopted = v.adoptedAt !== undefined ? `; recorded before bench runs were sealed, and sealed as it stood when the file was upgraded, ${new Date(v.adoptedAt).toISOString().slice(0, 10)}: what it held before then cannot be checked` : '';
  return `sealed    ${trials}, seal ${v.seal}${signed}${adopted}`;
}

interface VerifyArgs {
  'require-signed'?: boolean;
  id?: string;
  bundle?: string;
  'public-key'?: string;
  all?: boolean;
  db?: string;
  json?: boolean;
}

export function verifyCommand(io: CliIO, _exit: ExitCode): CommandModule<object, VerifyArgs> {
  return {
    command: 'verify [id]',
    describe: 'Recompute the hash chain and seal of stored debates and bench runs; fail on any mismatch',
    builder: (y) =>
      y
        .positional('id', { type: 'string', describe: 'Debate id or bench run id, or a unique prefix of one' })
        .option('all', { type: 'boolean', describe: 'Verify every debate and bench run in the database' })
        .option('bundle', { type: 'string', describe: 'Verify a bundle file (from `export --format bundle`) instead of the database' })
        .option('public-key', { type: 'string', describe: 'Also prove that each signed seal was signed with the private key of this Ed25519 public key' })
        .option('require-signed', { type: 'boolean', describe: 'With --public-key: fail on a seal that was never signed, too' })
        .option('db', dbOption)
        .option('json', { type: 'boolean', describe: 'Print one JSON object per debate' }),
    handler: async (args) => {
      const targets = [args.id !== undefined, args.all === true, args.bundle !== undefined].filter(Boolean).length;
      if (targets !== 1) {
        throw new InputError('VERIFY_TARGET', targets > 1 ? 'Give one of a debate id, --all or --bundle FILE.' : 'Name the debate to verify.', {
          hint: 'Run `conclave verify ID`, `conclave verify --all` for every debate, or `conclave verify --bundle FILE`.',
        });
      }
      if (args['require-signed'] && args['public-key'] === undefined) {
        throw new InputError('VERIFY_TARGET', '--require-signed needs --public-key: a signature is proved only against the key that should have made it.', {
          hint: 'Run `conclave verify ID --public-key conclave-seal.pub --require-signed`.',
        });
      }
      const { FILE_LIMITS, readTextFile } = await import('../../config/read-file.js');
      const { describeBreak } = await import('../../store/bundle.js');
      const { publicKeyFromPem, signatureProblem } = await import('../../store/signing.js');
      const keyFile = args['public-key'] === undefined ? null : resolve(io.cwd, args['public-key']);
      const publicKey =
        keyFile === null
          ? null
          : publicKeyFromPem(readTextFile(keyFile, { what: 'Public key', code: 'PUBLIC_KEY', maxBytes: 64 * 1024, hint: 'Pass the `conclave-seal.pub` file written by `conclave keys init`.' }), keyFile);
      /**
       * The verdict, made broken when a key is given and the seal is signed, but not by it. A seal
       * that was never signed (a debate recorded before `keys init`) is said to be so, not broken.
       */
      const withSignature = (v: Verdict, debate: Row): SignedVerdict => {
        if (v.state === 'broken') return v;
        if (!publicKey) return typeof debate.seal_key === 'string' && debate.seal_key !== '' ? { ...v, claimedKey: debate.seal_key } : v;
        const unsigned = (debate.seal_signature === null || debate.seal_signature === undefined || debate.seal_signature === '') && (debate.seal_key === null || debate.seal_key === undefined);
        if (unsigned && debate.seal !== null && debate.seal !== undefined) return { ...v, signed: false };
        const problem = signatureProblem(debate.seal as string | null, debate.seal_signature, publicKey);
        return problem === null ? ({ ...v, signedBy: keyIdOf(publicKey), signed: true } as SignedVerdict) : { state: 'broken', calls: v.calls, problem };
      };
      const requireSigned = args['require-signed'] === true;
      const unsignedError = (what: string, count: number, total: number): IntegrityError =>
        new IntegrityError('RECORD_NOT_SIGNED', `${count} of ${total} ${total === 1 ? 'seal is' : 'seals are'} not signed in ${what}: their hashes match, but no key vouches for them.`, {
          hint: 'They were sealed without --sign-key (for example before `conclave keys init`). Drop --require-signed to accept seals that were never signed.',
        });
      const { keyIdOf } = await import('../../store/signing.js');
      if (args.bundle !== undefined) {
        const { checkBundle, parseBundle } = await import('../../store/bundle.js');
        const { inertLine } = await import('../../render/inert.js');
        const path = resolve(io.cwd, args.bundle);
        const bundle = parseBundle(readTextFile(path, { what: 'Bundle', code: 'BUNDLE', maxBytes: FILE_LIMITS.bundle, hint: 'Check the path of the bundle file.' }), path);
        await validateBundleShape(bundle, path);
        const v = withSignature(checkBundle(bundle, path), bundle.debate);
        if (v.state === 'broken') {
          throw new IntegrityError('BUNDLE_NOT_SIGNED', `${path} is not signed by the key in ${keyFile}: ${v.problem}.`, {
            hint: 'Only a record sealed with that key\'s private key passes. Ask whoever holds it for a bundle they signed.',
          });
        }
        io.stdout.write(`${inertLine(`${String(bundle.debate.id)}  ${describeVerdict(v, describeBreak)}`)}\n`);
        if (requireSigned && v.signed === false) throw unsignedError(path, 1, 1);
        return;
      }
      const { inertLine, jsonText } = await import('../../render/inert.js');
      const store = await openRecordDb(args.db, io);
      try {
        const bench = await import('../../store/bench-seal.js');
        let ids: string[];
        let runs: string[] = [];
        if (args.all) {
          ids = store.debateIds();
          runs = store.read('list bench runs', bench.benchRunIds);
        } else {
          try {
            ids = [store.resolveId(args.id!)];
          } catch (err) {
            // Not a debate: a bench run's id names the run, whose rows are sealed too.
            const matches = err instanceof Error && (err as { code?: string }).code === 'DEBATE_NOT_FOUND' ? store.read('look up bench run', (s) => bench.matchBenchRuns(s, args.id!.trim())) : [];
            if (matches.length !== 1) throw err;
            ids = [];
            runs = matches;
          }
        }
        const broken: string[] = [];
        let unsigned = 0;
        for (const id of ids) {
          const { verdict, debate } = store.verifyWithRow(id);
          const v = withSignature(verdict, debate);
          if (args.json) {
            io.stdout.write(`${jsonText({ id, ...v })}\n`);
          } else {
            const line = describeVerdict(v, describeBreak);
            // Ids and row keys come from the file, which may have been edited by anyone.
            io.stdout.write(`${inertLine(`${id}  ${line}`)}\n`);
          }
          if (v.state === 'broken') broken.push(inertLine(`\`${id}\` (${describeBreak(v)})`));
          if (v.signed === false) unsigned++;
        }
        let brokenRuns = 0;
        for (const runId of runs) {
          const found = store.read(`verify bench run \`${runId}\``, (s) => s.transaction(() => ({ v: bench.verifyBenchRun(s, runId), row: bench.benchSealRow(s, runId) })).deferred());
          if (found.v === null) continue;
          let v: BenchSignedVerdict = found.v;
          if (v.state === 'sealed' && publicKey) {
            const row = found.row!;
            if ((row.seal_signature ?? '') === '' && row.seal_key === null) v = { ...v, signed: false };
            else {
              const problem = signatureProblem(row.seal, row.seal_signature, publicKey);
              v = problem === null ? { ...v, signedBy: keyIdOf(publicKey), signed: true } : { state: 'broken', runId, trials: v.trials, problem };
            }
          }
          if (args.json) io.stdout.write(`${jsonText({ benchRun: runId, ...v })}\n`);
          else io.stdout.write(`${inertLine(`${runId}  bench run ${describeBenchVerdict(v, publicKey !== null)}`)}\n`);
          if (v.state === 'broken') {
            broken.push(inertLine(`bench run \`${runId}\` (${v.problem})`));
            brokenRuns++;
          }
          if (v.signed === false) unsigned++;
        }
        const total = ids.length + runs.length;
        const what = runs.length === 0 ? 'debate' : ids.length === 0 ? 'bench run' : 'record';
        if (args.all && total === 0) io.stderr.write(`No debates in ${store.path}.\n`);
        if (broken.length > 0) {
          throw new IntegrityError(
            'RECORD_TAMPERED',
            `${broken.length} of ${total} ${what}${total === 1 ? '' : 's'} in ${store.path} do${broken.length === 1 ? 'es' : ''} not match ${broken.length === 1 ? 'its' : 'their'} hashes: ${broken.join('; ')}.`,
            {
              hint: publicKey
                ? 'A seal not signed by that key was written, or rewritten, without its private key. Restore the record from a backup or a signed bundle.'
                : brokenRuns === broken.length
                  ? "The run's rows changed after they were written, and with them its figures. Restore the database from a backup, or run the suite again with `conclave bench`."
                  : brokenRuns > 0
                    ? 'The record changed after it was written. Restore the debates from a backup or from a bundle exported earlier (`conclave import FILE`), and the bench runs from a backup, or run their suites again with `conclave bench`.'
                    : 'The record changed after it was written. Restore it from a backup or from a bundle exported earlier (`conclave import FILE`).',
            },
          );
        }
        if (requireSigned && unsigned > 0) throw unsignedError(store.path, unsigned, total);
      } finally {
        store.close();
      }
    },
  };
}
