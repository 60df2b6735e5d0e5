import { createHash } from 'node:crypto';
import { basename, resolve } from 'node:path';
import { InputError } from '../errors.js';
import type { Attachment } from '../protocol/material.js';
import { FILE_LIMITS, type FileRules, readRegularFile } from './read-file.js';
import { type Confinement, confinedGuard, confinedPath, realFolder, refusePrivateKey } from './trust.js';
import { formatNumber } from '../plural.js';

/** Largest file accepted as an attachment: 1 MiB, far more than any prompt can quote. */
export const MAX_ATTACHMENT_BYTES = FILE_LIMITS.attachment;

/**
 * Reads attached files as UTF-8 text, refusing before anything runs a file that is missing,
 * is not a regular file, is larger than 1 MiB, is not text (a NUL byte or invalid UTF-8), or holds only white space.
 * `base` resolves relative paths: the working directory for --attach, the preset's folder for `attach:`.
 */
export function readAttachments(paths: readonly string[], base: string, confine?: (given: string) => Confinement): Attachment[] {
  const out: Attachment[] = [];
  const names = new Set<string>();
  for (const given of paths) {
    const c = confine?.(given);
    const path = c ? confinedPath(given, base, c) : resolve(base, given);
    const { content, bytes } = readKindFile(path, ATTACHMENT, c ? confinedGuard(path, c) : undefined);
    if (c) refusePrivateKey(content, c);
    let name = basename(path);
    for (let n = 2; names.has(name); n++) name = `${basename(path)} (${n})`;
    names.add(name);
    out.push({ name, content, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
  }
  return out;
}

/** How the refusals of one kind of file read: its code prefix, its noun and the fix of each refusal. */
interface TextFileKind {
  code: string;
  noun: string;
  notFile: string;
  notFound: string;
  tooLarge: string;
  notText: string;
  empty: string;
}

const ATTACHMENT: TextFileKind = {
  code: 'ATTACHMENT',
  noun: 'Attachment',
  notFile: 'Attach text files only (--attach FILE), not folders or devices.',
  notFound: "Check the path given to --attach (relative to the working directory) or in the preset's `attach:` list (relative to the preset file).",
  tooLarge: 'Attach the part that matters (a chapter, the changed files) or split it into several files.',
  notText: 'Attach UTF-8 text (Markdown, source, plain text); convert a PDF or office document to text first.',
  empty: 'Check that the file was written before attaching it, or leave out --attach.',
};

const QUESTION: TextFileKind = {
  code: 'QUESTION',
  noun: 'Question file',
  notFile: 'Give --question-file a text file, not a folder or device.',
  notFound: 'Check the path given to --question-file (relative to the working directory).',
  tooLarge: 'Put a short question in the file and attach the long text with --attach FILE.',
  notText: 'Write the question as UTF-8 text.',
  empty: 'Write the question into the file, or pass it as an argument.',
};

/**
 * Reads a question from a file with the checks an attachment gets (a regular file, at most
 * 1 MiB, UTF-8 text, not blank); `path` is resolved against `base`, the working directory.
 */
export function readQuestionFile(path: string, base: string): string {
  return readKindFile(resolve(base, path), QUESTION).content.trim();
}

/** Reads standard input (`run -`) as a question, with the size, text and blank checks of a question file. */
export function questionFromBytes(bytes: Buffer): string {
  return checkText(bytes, 'standard input', { ...QUESTION, noun: 'The question on', empty: 'Pipe the question in (`echo "…" | conclave run - --preset NAME`), or pass it as an argument.' }).trim();
}

function readKindFile(path: string, kind: TextFileKind, guard?: FileRules['guard']): { content: string; bytes: Buffer } {
  const bytes = readRegularFile(path, { what: kind.noun, code: kind.code, maxBytes: MAX_ATTACHMENT_BYTES, hint: `${kind.notFound} ${kind.notFile}`, tooLargeHint: kind.tooLarge, ...(guard ? { guard } : {}) });
  return { content: checkText(bytes, path, kind), bytes };
}

function tooLarge(path: string, size: number, kind: TextFileKind): InputError {
  return new InputError(`${kind.code}_TOO_LARGE`, `${kind.noun} ${path} is ${formatNumber(size)} bytes; the limit is ${formatNumber(MAX_ATTACHMENT_BYTES)} bytes (1 MiB).`, { hint: kind.tooLarge });
}

function checkText(bytes: Buffer, path: string, kind: TextFileKind): string {
  if (bytes.length > MAX_ATTACHMENT_BYTES) throw tooLarge(path, bytes.length, kind);
  const notText = (why: string) => new InputError(`${kind.code}_NOT_TEXT`, `${kind.noun} ${path} is not a text file: ${why}.`, { hint: kind.notText });
  if (bytes.includes(0)) throw notText('it contains NUL bytes');
  let content: string;
  try {
    content = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw notText('it is not valid UTF-8');
  }
  content = content.replace(/^\uFEFF/, '');
  if (content.trim() === '') {
    throw new InputError(`${kind.code}_EMPTY`, kind.code === 'ATTACHMENT' ? `${kind.noun} ${path} is empty: there is nothing in it for the panel to read.` : `${kind.noun} ${path} is empty.`, { hint: kind.empty });
  }
  return content;
}

/**
 * Reads a preset's `attach:` list: like `readAttachments`, but a shared preset may only attach
 * files inside its own folder, and none of them hidden (a dot-file or inside a dot-folder), a
 * Conclave key file or a private key. An absolute path, a `..` step or a symlink leading out of
 * the folder is refused, so a preset cannot send `/etc/passwd`, `.env` or `~/.ssh` to a host.
 * The check is made on the opened file, which is what is read.
 */
export function readPresetAttachments(paths: readonly string[], presetDir: string, env: NodeJS.ProcessEnv = process.env): Attachment[] {
  const root = realFolder(presetDir);
  return readAttachments(paths, root, (given) => ({
    chooser: 'preset',
    roots: [root],
    env,
    refuse: (why) =>
      new InputError('PRESET_ATTACHMENT_OUTSIDE', `The preset attaches \`${given}\`, ${why}: a preset may only attach files inside its own folder (${root}), none of them hidden or a key.`, {
        hint: 'Move the file into the preset\'s folder and name it relative to the preset, or attach it yourself with --attach.',
      }),
  }));
}

/**
 * Reads the files an MCP client attaches: only under the folders `conclave mcp --allow-dir`
 * named (none by default), with the refusals of a preset's attachments.
 */
export function readMcpAttachments(paths: readonly string[], cwd: string, allowDirs: readonly string[], env: NodeJS.ProcessEnv = process.env): Attachment[] {
  const roots = allowDirs.map((d) => realFolder(resolve(cwd, d)));
  return readAttachments(paths, cwd, (given) => ({
    chooser: 'mcp',
    roots,
    env,
    refuse: (why) =>
      new InputError('MCP_ATTACHMENT_REFUSED', `The attachment \`${given}\` is refused: ${why}.`, {
        hint: roots.length === 0
          ? 'Start the server with `conclave mcp --allow-dir DIR` to let clients attach files under DIR (hidden files and keys stay refused).'
          : `Attach a file under ${roots.join(' or ')}, not hidden and not a key; start the server with another --allow-dir to widen it.`,
      }),
  }));
}
