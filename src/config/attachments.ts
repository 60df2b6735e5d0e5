import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { basename, isAbsolute, relative, resolve, sep } from 'node:path';
import { InputError } from '../errors.js';
import type { Attachment } from '../protocol/material.js';
import { FILE_LIMITS, readRegularFile } from './read-file.js';

/** Largest file accepted as an attachment: 1 MiB, far more than any prompt can quote. */
export const MAX_ATTACHMENT_BYTES = FILE_LIMITS.attachment;

/**
 * Reads attached files as UTF-8 text, refusing before anything runs a file that is missing,
 * is not a regular file, is larger than 1 MiB, is not text (a NUL byte or invalid UTF-8), or holds only white space.
 * `base` resolves relative paths: the working directory for --attach, the preset's folder for `attach:`.
 */
export function readAttachments(paths: readonly string[], base: string): Attachment[] {
  const out: Attachment[] = [];
  const names = new Set<string>();
  for (const given of paths) {
    const path = resolve(base, given);
    const bytes = readRegularFile(path, {
      what: 'Attachment',
      code: 'ATTACHMENT',
      maxBytes: MAX_ATTACHMENT_BYTES,
      hint: 'Check the path given to --attach (relative to the working directory) or in the preset\'s `attach:` list (relative to the preset file); attach text files only, not folders, devices or pipes.',
      tooLargeHint: 'Attach the part that matters (a chapter, the changed files) or split it into several files.',
    });
    if (bytes.includes(0)) throw notText(path, 'it contains NUL bytes');
    let content: string;
    try {
      content = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw notText(path, 'it is not valid UTF-8');
    }
    content = content.replace(/^\uFEFF/, '');
    if (content.trim() === '') {
      throw new InputError('ATTACHMENT_EMPTY', `Attachment ${path} is empty: there is nothing in it for the panel to read.`, {
        hint: 'Check that the file was written before attaching it, or leave out --attach.',
      });
    }
    let name = basename(path);
    for (let n = 2; names.has(name); n++) name = `${basename(path)} (${n})`;
    names.add(name);
    out.push({ name, content, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
  }
  return out;
}

function notText(path: string, why: string): InputError {
  return new InputError('ATTACHMENT_NOT_TEXT', `Attachment ${path} is not a text file: ${why}.`, {
    hint: 'Attach UTF-8 text (Markdown, source, plain text); convert a PDF or office document to text first.',
  });
}

/**
 * Reads a preset's `attach:` list: like `readAttachments`, but a shared preset may only attach
 * files inside its own folder. An absolute path, a `..` step or a symlink leading out of the
 * folder is refused, so a preset cannot send `/etc/passwd` or `~/.ssh` to a host.
 */
export function readPresetAttachments(paths: readonly string[], presetDir: string): Attachment[] {
  let root: string;
  try {
    root = realpathSync(presetDir);
  } catch {
    root = resolve(presetDir);
  }
  for (const given of paths) {
    const outside = (why: string): InputError =>
      new InputError('PRESET_ATTACHMENT_OUTSIDE', `The preset attaches \`${given}\`, ${why}: a preset may only attach files inside its own folder (${root}).`, {
        hint: 'Move the file into the preset\'s folder and name it relative to the preset, or attach it yourself with --attach.',
      });
    if (isAbsolute(given) || /^[A-Za-z]:/.test(given)) throw outside('an absolute path');
    if (given.split(/[\\/]/).includes('..')) throw outside('a path that climbs out with `..`');
    let real: string;
    try {
      real = realpathSync(resolve(root, given));
    } catch {
      // A missing file is reported by the reader, with its own message.
      continue;
    }
    const rel = relative(root, real);
    if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) throw outside(`a link to ${real}, outside the preset's folder`);
  }
  return readAttachments(paths, root);
}
