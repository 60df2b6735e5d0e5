import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { hashProgressWriter } from '../../src/cli/hash-progress.js';
import { plainStyle } from '../../src/render/style.js';

const GB = 1e9;

/** The writer fed a 4 GB file read in 1 GB steps, one every `stepMs`; what it wrote. */
function feed(live: boolean, stepMs: number): string {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  let clock = 0;
  const write = hashProgressWriter(out, { ...plainStyle, live, columns: 200 }, () => clock);
  const path = '/models/blobs/sha256-abc';
  write({ path, bytesRead: 0, size: 4 * GB, done: false });
  for (let read = 1; read <= 4; read++) {
    clock += stepMs;
    write({ path, bytesRead: read * GB, size: 4 * GB, done: false });
  }
  write({ path, bytesRead: 4 * GB, size: 4 * GB, done: true });
  return text;
}

describe('progress while a large model file is hashed', () => {
  it('redraws one line in place on a terminal, then leaves the finished line', () => {
    const text = feed(true, 1000);
    expect(text).toContain('\r\u001b[2KChecking the sha256 of /models/blobs/sha256-abc (4.0 GB): 50%, 1000 MB/s');
    expect(text.endsWith('\r\u001b[2KChecking the sha256 of /models/blobs/sha256-abc (4.0 GB): read in 4s, 1000 MB/s.\n')).toBe(true);
  });

  it('writes plain lines without escapes elsewhere (pipes, CI, NO_COLOR): as it starts, every 30 seconds and as it ends', () => {
    const lines = feed(false, 20_000).split('\n').filter(Boolean);
    expect(lines).toEqual([
      'Checking the sha256 of /models/blobs/sha256-abc (4.0 GB): remembered afterwards, so the next run does not read it again…',
      'Checking the sha256 of /models/blobs/sha256-abc (4.0 GB): 50%, 50 MB/s',
      'Checking the sha256 of /models/blobs/sha256-abc (4.0 GB): 100%, 50 MB/s',
      'Checking the sha256 of /models/blobs/sha256-abc (4.0 GB): read in 1m20s, 50 MB/s.',
    ]);
  });
});
