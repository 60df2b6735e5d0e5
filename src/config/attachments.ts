import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { InputError } from '../errors.js';
import type { Attachment } from '../protocol/material.js';

/** Largest file accepted as an attachment: 1 MiB, far more than any prompt can quote. */
export const MAX_ATTACHMENT_BYTES = 1024 * 1024;

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
    let size: number;
    try {
      const st = statSync(path);
      if (!st.isFile()) throw new InputError('ATTACHMENT_NOT_FILE', `Attachment ${path} is not a file.`, { hint: 'Attach text files only (--attach FILE), not folders or devices.' });
      size = st.size;
    } catch (err) {
      if (err instanceof InputError) throw err;
      throw new InputError('ATTACHMENT_NOT_FOUND', `Attachment ${path} does not exist or cannot be read.`, {
        hint: 'Check the path given to --attach (relative to the working directory) or in the preset\'s `attach:` list (relative to the preset file).',
      });
    }
    if (size > MAX_ATTACHMENT_BYTES) {
      throw new InputError('ATTACHMENT_TOO_LARGE', `Attachment ${path} is ${size.toLocaleString('en-US')} bytes; the limit is ${MAX_ATTACHMENT_BYTES.toLocaleString('en-US')} bytes (1 MiB).`, {
        hint: 'Attach the part that matters (a chapter, the changed files) or split it into several files.',
      });
    }
    const bytes = readFileSync(path);
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
