import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import type { Preset } from '../../config/preset-schema.js';
import { synthesizerCandidates } from '../../config/synthesizer.js';
import { assignSides } from '../../protocol/oxford.js';
import { inert, jsonText } from '../../render/inert.js';

interface PresetsArgs {
  json?: boolean;
  copy?: string;
  to?: string;
}

export function presetsCommand(io: CliIO, _exit: ExitCode): CommandModule<object, PresetsArgs> {
  return {
    command: 'presets',
    describe: 'List the built-in presets, or copy one to edit',
    builder: (y) =>
      y
        .option('json', { type: 'boolean', describe: 'Print JSON' })
        .option('copy', { type: 'string', describe: 'Copy this built-in preset, the agent files it names and the JSON Schema its editor line points at, into --to' })
        .option('to', { type: 'string', describe: 'The folder --copy writes to (default: the current folder)' }),
    handler: async (args) => {
      const writeOut = (text: string): boolean => io.stdout.write(inert(text));
      if (args.copy !== undefined) {
        const { copyBuiltinPreset } = await import('../../config/copy-preset.js');
        const { resolve, relative } = await import('node:path');
        const copied = copyBuiltinPreset(args.copy, resolve(io.cwd, args.to ?? '.'));
        if (args.json) {
          writeOut(`${jsonText(copied, 2)}\n`);
          return;
        }
        for (const f of copied.files) writeOut(`${f.state === 'written' ? 'wrote' : 'kept (same content)'} ${f.path}\n`);
        const rel = relative(io.cwd, copied.preset);
        const shown = rel.startsWith('.') || rel.startsWith('/') ? rel : `./${rel}`;
        writeOut(`Edit it, then: conclave run "your question" --preset ${/\s/.test(shown) ? `'${shown}'` : shown}\n`);
        return;
      }
      if (args.to !== undefined) throw new (await import('../../errors.js')).InputError('BAD_FLAG', '--to names the folder --copy writes to; it means nothing without --copy.', { hint: 'Add --copy NAME, e.g. `conclave presets --copy tech-decision --to presets-mine`.' });
      const { builtinPresetNames, loadPreset } = await import('../../config/load-preset.js');
      const presets = builtinPresetNames().map((name) => ({ name, ...loadPreset(name, io.cwd) }));
      if (args.json) {
        writeOut(`${jsonText(presets.map((p) => ({ name: p.name, source: p.source, preset: p.preset })), 2)}\n`);
        return;
      }
      for (const { name, preset } of presets) {
        writeOut(`${name}${preset.description ? ` — ${preset.description}` : ''}\n`);
        writeOut(`  agents: ${preset.agents.map((a) => `${a.id} (${a.model})`).join(', ')}\n`);
        writeOut(`  ${protocolLine(preset)}\n\n`);
      }
    },
  };
}

/** One line on how a preset runs: its protocol and the models of its roles. */
export function protocolLine(preset: Preset): string {
  const synth = preset.synthesizer.rotate ? `rotating over ${synthesizerCandidates(preset).join(', ')}` : (preset.synthesizer.model ?? '');
  switch (preset.protocol.kind) {
    case 'parallel':
      return `protocol: parallel  synthesizer: ${synth}`;
    case 'tournament':
      return `protocol: tournament  judge: ${preset.judge.model}  synthesizer: ${synth}`;
    case 'decompose':
      return `protocol: decompose  decomposer: ${preset.protocol.decomposer ?? preset.agents[0]?.id ?? ''}`;
    case 'oxford': {
      const sides = assignSides(preset.agents);
      return `protocol: oxford  for: ${sides.for.join(', ')}  against: ${sides.against.join(', ')}  judge: ${preset.judge.model}  synthesizer: ${synth}`;
    }
    case 'delphi':
      return `protocol: delphi  judge: ${preset.judge.model} (stances, when the question asks for no number)  synthesizer: ${synth}  rounds ≤ ${preset.protocol.maxRounds}, until the spread stops narrowing`;
    case 'auto':
      return `protocol: auto  advisor: ${preset.protocol.advisor ?? preset.judge.model}  judge: ${preset.judge.model}  synthesizer: ${synth}`;
    case 'pipeline':
      return `protocol: pipeline  roles: ${preset.agents.map((a) => `${a.id} (${a.role ?? 'reviewer'})`).join(', ')}  filter: ${preset.protocol.filterMode ?? 'list'}`;
    default:
      return `judge: ${preset.judge.model}  synthesizer: ${synth}  rounds ≤ ${preset.protocol.maxRounds}, exit at ${preset.protocol.convergenceThreshold}`;
  }
}
