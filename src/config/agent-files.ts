import { parse as parseYaml } from 'yaml';
import { InputError } from '../errors.js';
import { agentSchema } from './preset-schema.js';
import { FILE_LIMITS, readRegularFile } from './read-file.js';
import { type Confinement, confinedGuard, confinedPath, realFolder } from './trust.js';
import { formatInputIssues } from './input-issues.js';

/**
 * A preset's agents may be Markdown files, so a team keeps reviewed personas in one place:
 * `agents: [agents/skeptic.md, …]`, each path relative to the preset's folder and inside it.
 * The file's YAML front matter holds the agent's fields (`id`, `model`, `cluster`, `role`,
 * `think`, `options`, …) and its body is the persona. Returns the preset data with each such
 * entry replaced by the agent it defines; everything else is left for the preset schema.
 */
export function expandAgentFiles(data: unknown, presetDir: string): unknown {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return data;
  const agents = (data as { agents?: unknown }).agents;
  if (!Array.isArray(agents) || !agents.some((a) => typeof a === 'string')) return data;
  return { ...data, agents: agents.map((entry, i) => (typeof entry === 'string' ? readAgentFile(entry, presetDir, i) : entry)) };
}

/** The agent a Markdown file defines, checked field by field with the file named. */
export function readAgentFile(given: string, presetDir: string, index: number): Record<string, unknown> {
  const { file, confinement } = agentFilePath(given, presetDir, index);
  const bytes = readRegularFile(file, {
    what: 'Agent file',
    code: 'AGENT_FILE',
    maxBytes: FILE_LIMITS.preset,
    hint: 'Name a Markdown file inside the preset\'s folder, relative to the preset.',
    guard: confinedGuard(file, confinement),
  });
  const text = agentText(bytes, file);
  const { front, body } = splitFrontMatter(text, file);
  if (typeof front.persona === 'string' && body !== '') {
    throw invalid(file, ['persona: given both in the front matter and as the body; keep one (the body is the usual place)']);
  }
  const agent = body === '' ? front : { ...front, persona: body };
  const checked = agentSchema.safeParse(agent);
  if (!checked.success) throw invalid(file, formatInputIssues(checked.error, agent, agentSchema).split('\n').map((l) => l.replace(/^\s*-\s*/, '')));
  return agent;
}

function invalid(file: string, problems: string[]): InputError {
  return new InputError('INVALID_AGENT_FILE', `Agent file ${file} is invalid:\n${problems.map((p) => `  - ${p}`).join('\n')}`, {
    hint: 'Fix the fields named above in the file\'s front matter (between the --- lines); the body is the persona. presets/agents/ has examples.',
  });
}

/** Front matter between a first line `---` and the next `---` line, and the body after it, trimmed. */
function splitFrontMatter(text: string, file: string): { front: Record<string, unknown>; body: string } {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const end = lines[0]?.trim() === '---' ? lines.findIndex((l, i) => i > 0 && l.trim() === '---') : -1;
  if (end < 0) {
    throw invalid(file, ['front matter: the file must start with a line `---`, the agent\'s fields in YAML (at least `id` and `model`), and another line `---`']);
  }
  let front: unknown;
  try {
    front = parseYaml(lines.slice(1, end).join('\n'));
  } catch (err) {
    throw invalid(file, [`front matter: not valid YAML: ${(err as Error).message}`]);
  }
  if (front === null || typeof front !== 'object' || Array.isArray(front)) throw invalid(file, ['front matter: must be a YAML mapping of the agent\'s fields (`id: …`, `model: …`)']);
  return { front: front as Record<string, unknown>, body: lines.slice(end + 1).join('\n').trim() };
}

/** The file as UTF-8 text, refused as an attachment would be when it holds NUL bytes or invalid UTF-8. */
function agentText(bytes: Buffer, file: string): string {
  const notText = (why: string) => new InputError('AGENT_FILE_NOT_TEXT', `Agent file ${file} is not a text file: ${why}.`, { hint: 'Write the agent file as UTF-8 Markdown text.' });
  if (bytes.includes(0)) throw notText('it contains NUL bytes');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw notText('it is not valid UTF-8');
  }
}

/** The file's path, refused when it is not a .md path or lies outside the preset's folder (or is hidden). */
function agentFilePath(given: string, presetDir: string, index: number): { file: string; confinement: Confinement } {
  const where = `agents.${index}`;
  if (!given.toLowerCase().endsWith('.md')) {
    throw new InputError('INVALID_PRESET', `Preset agent ${where} is the text \`${given}\`: an agent is either a mapping of its fields or the path of a Markdown (.md) file.`, {
      hint: 'Write the agent inline (`- id: …`) or name its .md file relative to the preset.',
    });
  }
  const root = realFolder(presetDir);
  const confinement: Confinement = {
    chooser: 'preset',
    roots: [root],
    env: process.env,
    refuse: (why) =>
      new InputError('AGENT_FILE_OUTSIDE', `The preset's ${where} names \`${given}\`, ${why}: a preset may only read agent files inside its own folder (${root}), none of them hidden.`, {
        hint: 'Move the file into the preset\'s folder, or a folder under it, and name it relative to the preset.',
      }),
  };
  return { file: confinedPath(given, root, confinement), confinement };
}
