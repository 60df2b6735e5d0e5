import type { CommandModule } from 'yargs';
import { type CliIO, type ExitCode, outputColumns, tellUser } from '../io.js';
import { dbOption, openRecordDb } from '../shared.js';
import { inert, jsonText } from '../../render/inert.js';

interface ListArgs {
  bench?: boolean;
  db?: string;
  json?: boolean;
  limit: number;
  status?: string;
}

export function listCommand(io: CliIO, _exit: ExitCode): CommandModule<object, ListArgs> {
  return {
    command: 'list',
    describe: 'List stored debates, newest first',
    builder: (y) =>
      y
        .option('db', dbOption)
        .option('json', { type: 'boolean', describe: 'Print JSON' })
        .option('limit', { type: 'number', default: 50, describe: 'How many to show' })
        .option('status', { type: 'string', choices: ['running', 'completed', 'unsynthesized', 'failed', 'interrupted'], describe: 'Only debates with this status' })
        .option('bench', { type: 'boolean', describe: 'Only the debates `conclave bench` ran as items (hidden otherwise)' }),
    handler: async (args) => {
      const writeOut = (text: string): boolean => io.stdout.write(inert(text));
      const writeErr = (text: string): void => tellUser(io, inert(text));
      const store = await openRecordDb(args.db, io);
      try {
        const options = { limit: args.limit, ...(args.status ? { status: args.status as 'completed' } : {}), bench: args.bench ? ('only' as const) : ('hide' as const) };
        if (args.json) {
          const { debateListDocument } = await import('../../render/list-document.js');
          writeOut(`${jsonText(debateListDocument(store, options), 2)}\n`);
          return;
        }
        const rows = store.listDebates(options);
        const { flaggedTensionMaps } = await import('../../store/tensions-read.js');
        const flagged = flaggedTensionMaps(store, rows.map((r) => r.id));
        // Bench items (tens per bench run) would flood the list: they are counted, and listed with --bench.
        const hidden = args.bench ? 0 : store.benchDebateCount(args.status as 'completed' | undefined);
        const benchNote = hidden > 0 ? `${hidden} debate${hidden === 1 ? '' : 's'} run by \`conclave bench\` ${hidden === 1 ? 'is' : 'are'} not listed: \`conclave list --bench\` lists them, \`conclave bench list\` their runs.\n` : '';
        if (rows.length === 0) {
          // Say first that nothing matched, then what was left out.
          const any = store.listDebates({ limit: 1, bench: 'hide' }).length + store.benchDebateCount() > 0;
          const what = args.bench ? 'debate run by `conclave bench`' : 'debate';
          writeErr(
            args.status
              ? `No ${what} matched --status ${args.status} in ${store.path}.${any ? ' `conclave list` shows them all.' : ''}\n`
              : any
                ? `No ${what} to list in ${store.path}.\n`
                : `No debates in ${store.path} yet. Start one with \`conclave run "question" --preset NAME\`, or try \`conclave demo\`.\n`,
          );
          if (benchNote) writeErr(benchNote);
          return;
        }
        const { formatFittedTable } = await import('../../render/table.js');
        const columns = outputColumns(io);
        // Narrower terminals drop the agent count, then the creation time (the id starts with it).
        const wide = columns >= 120;
        const dated = columns >= 100;
        writeOut(
          formatFittedTable(
            ['id', ...(dated ? ['created'] : []), 'status', 'rounds', 'conv.', ...(wide ? ['agents'] : []), 'preset', 'question'],
            rows.map((r) => [
              r.id,
              ...(dated ? [timeCell(r.createdAt, wide ? 0 : 5)] : []),
              r.status + (r.exitReason && r.exitReason !== 'converged' && r.exitReason !== 'max_rounds' && r.exitReason !== r.status ? ` (${r.exitReason})` : ''),
              String(r.roundsCompleted),
              r.finalConvergence === null ? '-' : typeof r.finalConvergence === 'number' ? r.finalConvergence.toFixed(2) : '?',
              ...(wide ? [String(r.agentCount)] : []),
              textCell(r.presetName),
              textCell(r.question),
            ]),
            columns,
            12,
          ),
        );
        if (benchNote) writeErr(benchNote);
        if (flagged.count > 0) {
          const shown = flagged.ids.length ? `: ${flagged.ids.slice(0, 5).join(', ')}${flagged.ids.length > 5 ? ', …' : ''} listed above` : '';
          writeOut(`\n⚑ ${flagged.count} debate${flagged.count === 1 ? ' has a tension map' : 's have tension maps'} flagged for human review${shown} (see \`conclave show ID\`).\n`);
        }
      } finally {
        store.close();
      }
    },
  };
}

// A row edited by hand (`verify` names it) can hold a value of another type: it shows as `?`, and the other debates are listed.
function timeCell(ms: unknown, from: number): string {
  const at = typeof ms === 'number' ? new Date(ms) : null;
  return at === null || Number.isNaN(at.getTime()) ? '?' : at.toISOString().slice(from, 16).replace('T', ' ');
}

function textCell(value: unknown): string {
  return typeof value === 'string' ? value : '?';
}
