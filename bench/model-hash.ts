/**
 * What checking a model file costs: the sha256 of a file of SIZE MiB (default 1024) read in full, as a blob
 * is checked the first time, and again through the cache, as every later run checks it.
 * Run: npm run bench:model-hash [-- SIZE]. The file is fresh in the page cache: a cold read from a
 * USB disk is bounded by the disk instead.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileHashes } from '../src/embedded/file-hashes.js';

const mib = Number(process.argv[2] ?? 1024);
const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-hash-'));
try {
  const path = join(dir, 'model.gguf');
  const fd = openSync(path, 'w');
  const chunk = randomBytes(1 << 20);
  for (let i = 0; i < mib; i++) writeSync(fd, chunk);
  closeSync(fd);
  const cache = join(dir, 'cache', 'model-sha256.json');
  const time = async (hashes: FileHashes): Promise<number> => {
    const started = process.hrtime.bigint();
    await hashes.sha256(path);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const first = await time(new FileHashes(cache));
  // A new FileHashes is a new process: only the cache file remembers.
  const second = await time(new FileHashes(cache));
  console.log(`${mib} MiB read and hashed in ${(first / 1000).toFixed(2)} s: ${Math.round(mib / 1.048576 / (first / 1000))} MB/s`);
  console.log(`the same file checked again through the cache: ${second.toFixed(1)} ms`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
