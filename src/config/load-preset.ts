import { closest } from '../suggest.js';
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { InputError } from '../errors.js';
import { packagePath } from '../package-root.js';
import { type Preset, presetSchema } from './preset-schema.js';
import { sidesProblem } from '../protocol/oxford.js';
import { checkVotingPreset } from './voting-preset.js';
import { FILE_LIMITS, type FileRules, readTextFile } from './read-file.js';
import { expandAgentFiles } from './agent-files.js';
export { formatIssues } from './zod-issues.js';
import { formatInputIssues } from './input-issues.js';
import { hostUrlProblems } from './load-hosts.js';

const EXTENSIONS = ['.yaml', '.yml', '.json'];

export interface LoadedPreset {
  preset: Preset;
  /** Where it came from: a file path. */
  source: string;
  warnings: string[];
}

/** Names of the presets shipped in presets/. */
export function builtinPresetNames(): string[] {
  const dir = packagePath('presets');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => EXTENSIONS.includes(extname(f)) && !f.endsWith('.schema.json'))
    .map((f) => basename(f, extname(f)))
    .sort();
}

/** `--preset NAME` looks in presets/; anything that looks like a path (or exists as a file) is read directly. */
export function resolvePresetPath(nameOrPath: string, cwd = process.cwd()): string {
  const asPath = resolve(cwd, nameOrPath);
  const looksLikePath = /[\\/]/.test(nameOrPath) || EXTENSIONS.includes(extname(nameOrPath));
  if (existsSync(asPath) && looksLikePath) return asPath;
  if (!looksLikePath) {
    for (const ext of EXTENSIONS) {
      const candidate = packagePath('presets', `${nameOrPath}${ext}`);
      if (existsSync(candidate)) return candidate;
    }
    if (existsSync(asPath)) return asPath;
    const names = builtinPresetNames();
    const near = closest(nameOrPath, names);
    const local = EXTENSIONS.map((ext) => `${nameOrPath}${ext}`).find((f) => existsSync(resolve(cwd, f)));
    throw new InputError('UNKNOWN_PRESET', `There is no preset named \`${nameOrPath}\`.${near ? ` Did you mean \`${near}\`?` : ''}`, {
      hint: local
        ? `A file of yours is named so: pass it as a path, \`--preset ./${local}\` (a bare name is a built-in preset).`
        : `Built-in presets: ${names.join(', ') || '(none)'}. Or pass a path to a YAML/JSON preset file.`,
    });
  }
  const sibling = nearestSibling(asPath);
  throw new InputError('PRESET_NOT_FOUND', `Preset file ${asPath} does not exist.${sibling ? ` Did you mean ${sibling}?` : ''}`, {
    hint: 'Check the path, or use a built-in preset name (see `conclave presets`).',
  });
}

/** A preset file beside a path that does not exist, with the nearest name (`base.yml` for `base.yaml`), or null. */
function nearestSibling(path: string): string | null {
  let files: string[];
  try {
    files = readdirSync(dirname(path)).filter((f) => EXTENSIONS.includes(extname(f)));
  } catch {
    return null;
  }
  const near = closest(basename(path), files) ?? closest(basename(path, extname(path)), files.map((f) => basename(f, extname(f))));
  const file = near === null ? undefined : files.find((f) => f === near || basename(f, extname(f)) === near);
  return file === undefined ? null : resolve(dirname(path), file);
}

/** `guard`: checks the file as opened before a byte is read (an MCP client's preset: src/config/mcp-preset.ts). */
export function loadPreset(nameOrPath: string, cwd = process.cwd(), guard?: FileRules['guard']): LoadedPreset {
  const path = resolvePresetPath(nameOrPath, cwd);
  const text = readTextFile(path, {
    what: 'Preset file',
    code: 'PRESET',
    maxBytes: FILE_LIMITS.preset,
    hint: 'Pass a YAML or JSON preset file, or a built-in preset name (see `conclave presets`).',
    ...(guard ? { guard } : {}),
  });
  let data: unknown;
  try {
    data = extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new InputError('PRESET_SYNTAX', `Preset ${path} is not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}`, {
      hint: 'Fix the syntax error at the position shown.',
      cause: err,
    });
  }
  const given = (data as { agents?: unknown } | null)?.agents;
  const agentFiles = Array.isArray(given) ? given.map((a) => (typeof a === 'string' ? a : undefined)) : [];
  return { ...parsePreset(expandAgentFiles(data, dirname(path)), path, agentFiles), source: path };
}

/**
 * Validate preset data. Throws an InputError naming each bad field by its path. `agentFiles`:
 * the Markdown file each agent came from, if any, so a clash of ids names the files.
 */
export function parsePreset(data: unknown, source = 'preset', agentFiles: readonly (string | undefined)[] = []): { preset: Preset; warnings: string[] } {
  const result = presetSchema.safeParse(data);
  if (!result.success) {
    throw new InputError('INVALID_PRESET', `Preset ${source} is invalid:\n${formatInputIssues(result.error, data, presetSchema)}`, {
      hint: 'Fix the fields named above. The format is described in presets/preset.schema.json.',
    });
  }
  const preset = result.data;
  const ids = new Map<string, number>();
  const entry = (i: number) => `agents.${i}${agentFiles[i] === undefined ? '' : ` (${agentFiles[i]})`}`;
  for (const [i, agent] of preset.agents.entries()) {
    const first = ids.get(agent.id);
    if (first !== undefined) {
      throw new InputError('INVALID_PRESET', `Preset ${source} is invalid:\n  - agents.${i}.id: \`${agent.id}\` is used by two agents, ${entry(first)} and ${entry(i)}`, {
        hint: agentFiles[i] !== undefined && agentFiles[i] === agentFiles[first] ? 'The same agent file is listed twice: remove one line.' : 'Give every agent its own id.',
      });
    }
    if (agent.id === 'judge' || agent.id === 'synthesizer') {
      throw new InputError('INVALID_PRESET', `Preset ${source} is invalid:\n  - agents.${i}.id: \`${agent.id}\` is reserved`, {
        hint: 'Rename the agent.',
      });
    }
    ids.set(agent.id, i);
  }
  const hostProblems = hostUrlProblems(preset.hosts ?? [], 'hosts.');
  if (hostProblems.length > 0) {
    throw new InputError('INVALID_PRESET', `Preset ${source} is invalid:\n${hostProblems.join('\n')}`, {
      hint: 'Fix the host URLs named above: each is http(s)://HOST:PORT (an OpenAI-compatible server\'s ends in /v1).',
    });
  }
  const shape = checkProtocolPreset(preset);
  if (shape.length > 0) {
    throw new InputError('INVALID_PRESET', `Preset ${source} is invalid:\n${shape.map((e) => `  - ${e}`).join('\n')}`, {
      hint: 'Fix the fields named above; docs/protocols.md describes each protocol and its fields.',
    });
  }
  const voting = checkVotingPreset(preset);
  if (voting.errors.length > 0) {
    throw new InputError('INVALID_PRESET', `Preset ${source} is invalid:\n${voting.errors.map((e) => `  - ${e}`).join('\n')}`, {
      hint: 'Fix the fields named above; docs/voting.md explains clusters and the voting block.',
    });
  }
  return { preset, warnings: [...presetWarnings(preset), ...voting.warnings] };
}

/** Rules across fields that the schema alone cannot state, as `path: problem` lines. */
export function checkProtocolPreset(preset: Preset): string[] {
  const errors: string[] = [];
  const kind = preset.protocol.kind;
  if (!preset.synthesizer.rotate && !preset.synthesizer.model) errors.push('synthesizer.model: required unless synthesizer.rotate is true');
  if (preset.synthesizer.models && !preset.synthesizer.rotate) errors.push('synthesizer.models: only used with rotate: true; add it or remove the list');
  if (preset.protocol.advisor !== undefined && kind !== 'auto') errors.push(`protocol.advisor: only used when protocol.kind is auto (it is ${kind})`);
  // The critique, its decision and its early exit are the debate's; with `auto` they wait for the advisor to choose a debate.
  if (kind !== 'debate' && kind !== 'auto') {
    for (const field of ['critique', 'decision', 'earlyExit'] as const) {
      if (preset.protocol[field] !== undefined) errors.push(`protocol.${field}: only used when protocol.kind is debate (it is ${kind}); remove it or set protocol.kind: debate`);
    }
  }
  const decomposer = preset.protocol.decomposer;
  if (decomposer !== undefined) {
    // With `auto`, the decomposer waits for the advisor to choose decompose.
    if (kind !== 'decompose' && kind !== 'auto') errors.push(`protocol.decomposer: only used when protocol.kind is decompose (it is ${kind})`);
    else if (!preset.agents.some((a) => a.id === decomposer)) {
      errors.push(`protocol.decomposer: \`${decomposer}\` is not an agent id (agents: ${preset.agents.map((a) => a.id).join(', ')})`);
    }
  }
  // The judge scores the advocate's peers alone: with two agents that is one agent, whose "convergence" is with itself.
  if (preset.protocol.advocate && preset.agents.length < 3) errors.push(`protocol.advocate: needs three agents or more (this panel has ${preset.agents.length}): the judge scores convergence on the agents other than the round's advocate, and one agent cannot converge with anyone`);
  errors.push(...checkPipelineRoles(preset));
  errors.push(...checkOxfordSides(preset));
  if (kind === 'tournament' || kind === 'decompose' || kind === 'pipeline' || kind === 'oxford') {
    if (preset.voting && preset.voting.enabled !== false) errors.push(`voting: the ${kind} protocol runs no vote; remove the block or set voting.enabled: false`);
  }
  return errors;
}

/** Sides belong to Oxford debates: elsewhere they are an error. An Oxford debate needs a speaker on each side. */
function checkOxfordSides(preset: Preset): string[] {
  const kind = preset.protocol.kind;
  if (kind !== 'oxford') {
    return preset.agents.flatMap((a, i) => (a.side === undefined ? [] : [`agents.${i}.side: sides are only used when protocol.kind is oxford (it is ${kind}); remove it or set protocol.kind: oxford`]));
  }
  const errors: string[] = [];
  const problem = sidesProblem(preset.agents);
  if (problem) errors.push(`agents: ${problem}`);
  return errors;
}

/**
 * Roles belong to pipelines: elsewhere they are an error. A pipeline needs a reviewer (an agent
 * without a role reviews), and takes at most one lead and one filter; without a filter agent
 * the synthesizer model filters.
 */
function checkPipelineRoles(preset: Preset): string[] {
  const kind = preset.protocol.kind;
  const errors: string[] = [];
  // With `auto`, roles wait for the advisor: they count only if it chooses a pipeline.
  if (kind === 'auto') return errors;
  if (kind !== 'pipeline') {
    preset.agents.forEach((a, i) => {
      if (a.role !== undefined) errors.push(`agents.${i}.role: roles are only used when protocol.kind is pipeline (it is ${kind}); remove it or set protocol.kind: pipeline`);
    });
    if (preset.protocol.filterMode !== undefined) errors.push(`protocol.filterMode: only used when protocol.kind is pipeline (it is ${kind})`);
    return errors;
  }
  const holders = (role: string) => preset.agents.filter((a) => (a.role ?? 'reviewer') === role).map((a) => a.id);
  if (holders('reviewer').length === 0) errors.push('agents: a pipeline needs at least one reviewer (role: reviewer, or an agent with no role)');
  for (const role of ['lead', 'filter']) {
    const ids = holders(role);
    if (ids.length > 1) errors.push(`agents: a pipeline takes one ${role} at most (${ids.join(', ')} are all ${role})`);
  }
  return errors;
}

export function presetWarnings(preset: Preset): string[] {
  const warnings: string[] = [];
  const debaterModels = new Set(preset.agents.map((a) => a.model));
  // A decomposition has no synthesizer; a pipeline with a filter agent does not call it.
  const unused = preset.protocol.kind === 'decompose' || (preset.protocol.kind === 'pipeline' && preset.agents.some((a) => a.role === 'filter'));
  if (preset.synthesizer.model && debaterModels.has(preset.synthesizer.model) && !unused) {
    warnings.push(
      `The synthesizer model \`${preset.synthesizer.model}\` also debates: its own arguments may weigh more in the final answer. Use a model that is not on the panel.`,
    );
  }
  // Delphi keeps the panel anonymous: the map's targeted exchange and a vote would name peers.
  if (preset.protocol.kind === 'delphi') {
    const ignored = [...(preset.tensions?.enabled ? ['tensions'] : []), ...(preset.voting && preset.voting.enabled !== false ? ['voting'] : [])];
    if (ignored.length) warnings.push(`The delphi protocol runs no optional stage, so ${ignored.join(' and ')} ${ignored.length === 1 ? 'is' : 'are'} ignored: the tension map's exchange and a vote would show panelists each other's names (docs/protocol-delphi.md).`);
  }
  return warnings;
}
