import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import { eventsOption, showThinkingOption } from '../events-args.js';
import { dbOption, type MaterialArgs, materialOf, materialOptions, signKeyOption } from '../shared.js';

interface DemoArgs extends MaterialArgs {
  question?: string;
  preset: string;
  db?: string;
  'sign-key'?: string;
  'token-ms': number;
  json?: boolean;
  events?: boolean;
  'show-thinking'?: boolean;
  quiet?: boolean;
}

export const DEMO_QUESTION = 'Should we migrate this tool from SQLite to Postgres now?';

/** The question a preset's demo asks when none is given: Delphi's scripted panel answers with a number, so its question asks for one. */
const PRESET_QUESTIONS: Record<string, string> = {
  delphi: 'At what sustained write rate, in writes per second, should this tool move from SQLite to Postgres?',
};

export function demoCommand(io: CliIO, exit: ExitCode): CommandModule<object, DemoArgs> {
  return {
    command: 'demo [question]',
    describe: 'Run a whole debate against the built-in simulator: no GPU, no Ollama needed',
    builder: (y) =>
      y
        .positional('question', { type: 'string', describe: `The question (the simulated panel answers from a script; default: "${DEMO_QUESTION}", or the preset's own demo question)` })
        .option('preset', { alias: 'p', type: 'string', default: 'tech-decision', describe: 'Preset whose panel the simulator plays' })
        .option('db', dbOption)
        .option('sign-key', signKeyOption)
        .option('token-ms', { type: 'number', default: 8, describe: 'Simulated time per token in ms' })
        .options(materialOptions)
        .option('json', { type: 'boolean', describe: 'Print the whole debate as JSON' })
        .option('events', eventsOption)
        .conflicts('events', 'json')
        .option('show-thinking', showThinkingOption)
        .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress on stderr' }),
    handler: async (args) => {
      const { startSimulator } = await import('../../sim/index.js');
      const { demoResponder, simModelsFor } = await import('../../sim/demo.js');
      const { loadPreset } = await import('../../config/load-preset.js');
      const { applyOverrides, endBeforeStart, runFromCli } = await import('../run-debate-cli.js');
      const { readAttachments } = await import('../../config/attachments.js');
      let preset: ReturnType<typeof loadPreset>['preset'];
      try {
        preset = loadPreset(args.preset, io.cwd).preset;
        // Every input is checked before the simulator starts, so a mistake is the only thing said.
        applyOverrides(preset, materialOf(args));
        readAttachments(materialOf(args).attach, io.cwd);
      } catch (err) {
        // With --events the output still ends with its `end` line, as `run` does when refused before it starts.
        if (args.events) endBeforeStart(io, err);
        throw err;
      }
      // A 24 GiB workstation GPU, stated, so the plan is made as it would be on real hardware.
      const sim = await startSimulator({ port: 0, models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: args['token-ms'], vramBytes: 24 * 2 ** 30 });
      try {
        if (!args.quiet) io.stderr.write(`Simulated Ollama on ${sim.url}; the panel's answers are scripted.\n\n`);
        exit.value = await runFromCli(
          {
            question: args.question ?? PRESET_QUESTIONS[args.preset] ?? DEMO_QUESTION,
            preset: args.preset,
            host: sim.url,
            'vram-gib': 24,
            ...materialOf(args),
            ...(args.db === undefined ? {} : { db: args.db }),
            ...(args['sign-key'] ? { 'sign-key': args['sign-key'] } : {}),
            ...(args.json ? { json: true } : {}),
            ...(args.events ? { events: true } : {}),
            ...(args['show-thinking'] ? { 'show-thinking': true } : {}),
            ...(args.quiet ? { quiet: true } : {}),
          },
          io,
        );
        // The tension-map demo exists to show the map: after the card (which the plain demo shares), the
        // whole map as `show` has it: the table with claim ids, the targeted exchange word for word, the coverage.
        // With --json or --events stdout carries that document or those lines alone.
        if (args.preset === 'tension-map' && !args.json && !args.events) await printWholeMap(io, args.db);
      } catch (err) {
        // The demo's simulator stops with the demo, so `resume` alone would find no host: say which one to start.
        const { InterruptedError } = await import('../../errors.js');
        if (!(err instanceof InterruptedError) || err.debateId === null) throw err;
        throw new InterruptedError(err.message, {
          debateId: err.debateId,
          hint: `The demo's simulator stopped with it. To go on, start one in another terminal with \`conclave sim\`, then run \`conclave resume ${err.debateId} --host http://127.0.0.1:11434${args.db ? ` --db ${args.db}` : ''}\`.`,
        });
      } finally {
        await sim.close();
      }
    },
  };
}

async function printWholeMap(io: CliIO, db: string | undefined): Promise<void> {
  const { openRecordDb } = await import('../shared.js');
  const { tensionMarkdown } = await import('../../render/tensions.js');
  const { markdownDeep, inert } = await import('../../render/inert.js');
  const { detectStyle } = await import('../../render/style.js');
  const { wrapLine } = await import('../../render/wrap.js');
  const store = await openRecordDb(db, io);
  try {
    const newest = store.listDebates({ limit: 20 }).find((d) => d.presetName === 'tension-map');
    if (!newest) return;
    const lines = tensionMarkdown(markdownDeep(store.getDebate(newest.id)));
    if (lines.length === 0) return;
    // Fitted to the card's width, as the card is: Markdown reads the same with its lines wrapped.
    const width = Math.min(detectStyle(io.stdout, io.env).columns, 100);
    const fitted = inert(lines.slice(2).join('\n'))
      .split('\n')
      .flatMap((l) => wrapLine(l, width));
    io.stdout.write(`\nTHE WHOLE MAP (as \`conclave show ${newest.id}\` prints it)\n\n${fitted.join('\n')}\n`);
  } finally {
    store.close();
  }
}
