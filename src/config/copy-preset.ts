import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { InputError } from '../errors.js';
import { closest } from '../suggest.js';
import { packagePath } from '../package-root.js';
import { builtinPresetNames, resolvePresetPath } from './load-preset.js';

/** The editor schema's file name: the one the shipped presets' `yaml-language-server` line names beside them. */
export const PRESET_SCHEMA_FILE = 'preset.schema.json';

export interface CopiedPreset {
  /** The preset file written, or left as it was when it already held the same text. */
  preset: string;
  /** Every file of the copy, each `written` or `same` (already there with the same content). */
  files: { path: string; state: 'written' | 'same' }[];
}

/**
 * Copies a built-in preset into `dir` with what it needs beside it: the agent files it names and
 * the JSON Schema its `yaml-language-server` line points at, so an editor finds the schema offline.
 * A file already there with other content is refused, and then nothing is written.
 */
export function copyBuiltinPreset(name: string, dir: string): CopiedPreset {
  const names = builtinPresetNames();
  if (!names.includes(name)) {
    const near = closest(name, names);
    throw new InputError('UNKNOWN_PRESET', `There is no built-in preset named \`${name}\` to copy.${near ? ` Did you mean \`${near}\`?` : ''}`, { hint: `Built-in presets: ${names.join(', ')}.` });
  }
  const source = resolvePresetPath(name, packagePath('presets'));
  const from = dirname(source);
  const text = readFileSync(source, 'utf8');
  const agents = ((parseYaml(text) as { agents?: unknown[] } | null)?.agents ?? []).filter((a): a is string => typeof a === 'string');
  const plan = [basename(source), ...agents, PRESET_SCHEMA_FILE].map((rel) => ({ path: resolve(dir, rel), content: readFileSync(join(from, rel)) }));
  const clashing = plan.filter((f) => existsSync(f.path) && !readFileSync(f.path).equals(f.content)).map((f) => f.path);
  if (clashing.length > 0) {
    throw new InputError('FILE_EXISTS', `Not copying the preset \`${name}\`: ${clashing.join(', ')} already ${clashing.length === 1 ? 'exists' : 'exist'} with other content.`, {
      hint: 'Move or remove those files, or copy into another folder with --to DIR.',
    });
  }
  const files = plan.map((f) => {
    if (existsSync(f.path)) return { path: f.path, state: 'same' as const };
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content, { flag: 'wx' });
    return { path: f.path, state: 'written' as const };
  });
  return { preset: files[0]!.path, files };
}
