import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { InputError } from '../errors.js';
import { formatNumber } from '../plural.js';

/** What a reader accepts, and how it names the file in messages. */
export interface FileRules {
  /** Capitalised, e.g. `Preset file`, `Attachment`, `Bundle`. */
  what: string;
  /** Error code prefix: `PRESET`, `HOSTS`, `BUNDLE`, `ATTACHMENT`, … */
  code: string;
  maxBytes: number;
  /** What to check when the file is missing or unreadable. */
  hint: string;
  /** What to do with a file over the limit. */
  tooLargeHint?: string;
  /**
   * Called with the opened descriptor of a regular file before a byte is read: it may refuse the
   * file by throwing. What it checks (where the file really is) is what is then read, so no
   * swap of a path between the check and the read is possible.
   */
  guard?: (fd: number, stats: Stats) => void;
}

const MiB = 1024 * 1024;

/** Limits of the files Conclave reads. */
export const FILE_LIMITS = {
  preset: MiB,
  hosts: MiB,
  attachment: MiB,
  bundle: 256 * MiB,
} as const;

/**
 * Reads a whole file, refusing (exit 2) before reading a byte of one that is not a regular file
 * (a folder, a device such as /dev/zero, a FIFO, a socket) or is larger than `maxBytes`.
 * It opens without blocking, so a FIFO with no writer is refused at once instead of hanging,
 * and reads at most `maxBytes + 1` bytes, so a file that grows while it is read is refused too.
 */
export function readRegularFile(path: string, rules: FileRules): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`${rules.code}_NOT_FOUND`, `${rules.what} ${path} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? (err as Error).message})`}.`, {
      hint: rules.hint,
    });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isDirectory() ? 'a folder' : st.isFIFO() ? 'a named pipe' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device' : st.isSocket() ? 'a socket' : 'not a regular file';
      throw new InputError(`${rules.code}_NOT_FILE`, `${rules.what} ${path} is ${kind}, not a regular file.`, {
        hint: `Give the path of a regular file. ${rules.hint}`,
      });
    }
    rules.guard?.(fd, st);
    if (st.size > rules.maxBytes) throw tooLarge(path, rules, st.size, false);
    const chunks: Buffer[] = [];
    let total = 0;
    const chunk = Buffer.alloc(Math.min(rules.maxBytes + 1, 64 * 1024));
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > rules.maxBytes) throw tooLarge(path, rules, total, true);
      chunks.push(Buffer.from(chunk.subarray(0, n)));
    }
    return Buffer.concat(chunks, total);
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(`${rules.code}_NOT_FOUND`, `${rules.what} ${path} cannot be read: ${(err as Error).message}.`, { hint: rules.hint });
  } finally {
    closeSync(fd);
  }
}

/** `readRegularFile` decoded as UTF-8 text. */
export function readTextFile(path: string, rules: FileRules): string {
  return readRegularFile(path, rules).toString('utf8');
}

function tooLarge(path: string, rules: FileRules, size: number, growing: boolean): InputError {
  const limit = rules.maxBytes >= MiB ? `${rules.maxBytes / MiB} MiB` : `${rules.maxBytes} bytes`;
  return new InputError(`${rules.code}_TOO_LARGE`, `${rules.what} ${path} is ${formatNumber(size)} bytes${growing ? ' or more' : ''}; the limit is ${formatNumber(rules.maxBytes)} bytes (${limit}).`, {
    hint: rules.tooLargeHint ?? 'Check that the path names the file you meant.',
  });
}
