import type { CommandModule } from 'yargs';
import type { CliIO, ExitCode } from '../io.js';
import type { Preset } from '../../config/preset-schema.js';
import { synthesizerCandidates } from '../../config/synthesizer.js';
import { assignSides } from '../../protocol/oxford.js';
import { inert, jsonText } from '../../render/inert.js';

interface PresetsArgs {
  json?: boolean;
}

export function presetsCommand(io: CliIO, _exit: ExitCode): CommandModule<object, PresetsArgs> {
  return {
    command: 'presets',
    describe: 'List the built-in presets',
    builder: (y) => y.option('json', { type: 'boolean', describe: 'Print JSON' }),
    handler: async (args) => {
      const writeOut = (text: string): boolean => io.stdout.write(inert(text));
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
