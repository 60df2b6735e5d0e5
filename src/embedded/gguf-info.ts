import { closeSync, openSync, readSync } from 'node:fs';

/** What Conclave reads from a GGUF file's header: its scalar metadata (arrays are skipped, bar their length). */
export interface GgufInfo {
  version: number;
  tensorCount: number;
  metadata: Record<string, string | number | boolean | bigint>;
  /** Lengths of array values, e.g. `tokenizer.ggml.tokens`. */
  arrayLengths: Record<string, number>;
  /** The string arrays asked for with `keep` (the vocabulary, to turn tokens back into bytes). */
  arrays: Record<string, (string | number)[]>;
  /**
   * How long the file must be to hold every tensor its header describes (the end of the tensor that
   * ends last); a tensor of a type not in TYPE_SIZES counts up to its start only.
   */
  bytesNeeded: number;
}

/** Bytes per block and elements per block of ggml's tensor types (ggml.c, type_traits). */
const TYPE_SIZES: Readonly<Record<number, readonly [bytes: number, elements: number]>> = {
  0: [4, 1], 1: [2, 1], 2: [18, 32], 3: [20, 32], 6: [22, 32], 7: [24, 32], 8: [34, 32], 10: [84, 256], 11: [110, 256],
  12: [144, 256], 13: [176, 256], 14: [210, 256], 24: [1, 1], 25: [2, 1], 26: [4, 1], 27: [8, 1], 28: [8, 1], 30: [2, 1],
};
const SCALAR_SIZE: Readonly<Record<number, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
/** Header metadata read at most: past it a file is taken as not GGUF (a real header is a few MB of vocabulary). */
const MAX_HEADER_BYTES = 256 * 2 ** 20;

/**
 * Reads the header of a GGUF file (ggml docs/gguf.md, versions 2 and 3) without loading the
 * model: enough to say its architecture, context length and geometry. Throws on a file that is not GGUF,
 * with the reason alone (the caller names the model and its file).
 */
export function readGgufInfo(path: string, keep: readonly string[] = []): GgufInfo {
  const fd = openSync(path, 'r');
  try {
    const r = new Reader(fd);
    const magic = r.bytes(4).toString('latin1');
    if (magic !== 'GGUF') throw new Error(`it is not a GGUF file (it starts with ${JSON.stringify(magic)})`);
    const version = r.u32();
    if (version < 2 || version > 3) throw new Error(`it is GGUF version ${version}; versions 2 and 3 are read`);
    const tensorCount = Number(r.u64());
    const kvCount = Number(r.u64());
    const metadata: GgufInfo['metadata'] = {};
    const arrayLengths: Record<string, number> = {};
    const arrays: GgufInfo['arrays'] = {};
    for (let i = 0; i < kvCount; i++) {
      const key = r.string();
      const type = r.u32();
      if (type === 9) {
        const itemType = r.u32();
        const count = Number(r.u64());
        arrayLengths[key] = count;
        if (keep.includes(key)) {
          const items: (string | number)[] = [];
          for (let j = 0; j < count; j++) {
            const v = r.value(itemType);
            items.push(typeof v === 'bigint' ? Number(v) : typeof v === 'boolean' ? Number(v) : v);
          }
          arrays[key] = items;
        } else {
          for (let j = 0; j < count; j++) r.skipValue(itemType);
        }
      } else {
        metadata[key] = r.value(type);
      }
    }
    // Each tensor's name, shape, type and offset from the start of the data, which is aligned after the last of them.
    let tensorsEnd = 0;
    for (let i = 0; i < tensorCount; i++) {
      r.string();
      const dims = r.u32();
      if (dims > 8) throw new Error(`a tensor says it has ${dims} dimensions`);
      let elements = 1;
      for (let d = 0; d < dims; d++) elements *= Number(r.u64());
      const size = TYPE_SIZES[r.u32()];
      const offset = Number(r.u64());
      tensorsEnd = Math.max(tensorsEnd, offset + (size ? (elements / size[1]) * size[0] : 0));
    }
    const align = typeof metadata['general.alignment'] === 'number' && metadata['general.alignment'] > 0 ? metadata['general.alignment'] : 32;
    const bytesNeeded = Math.ceil(r.offset() / align) * align + tensorsEnd;
    return { version, tensorCount, metadata, arrayLengths, arrays, bytesNeeded };
  } finally {
    closeSync(fd);
  }
}

/** The geometry Conclave plans with: context length and KV-cache bytes per token at f16. */
export function ggufGeometry(info: GgufInfo): { architecture: string | null; contextLength: number | null; kvBytesPerToken: number | null } {
  const arch = typeof info.metadata['general.architecture'] === 'string' ? (info.metadata['general.architecture'] as string) : null;
  const num = (key: string): number | null => {
    const v = arch ? info.metadata[`${arch}.${key}`] : undefined;
    return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : null;
  };
  const layers = num('block_count');
  const embd = num('embedding_length');
  const heads = num('attention.head_count');
  const kvHeads = num('attention.head_count_kv') ?? heads;
  const kv = layers && embd && heads && kvHeads ? 2 * layers * (embd / heads) * kvHeads * 2 : null;
  return { architecture: arch, contextLength: num('context_length'), kvBytesPerToken: kv };
}

class Reader {
  readonly #fd: number;
  #buffer = Buffer.alloc(0);
  #at = 0;
  #position = 0;
  constructor(fd: number) {
    this.#fd = fd;
  }
  #need(n: number): void {
    if (this.#at + n <= this.#buffer.length) return;
    if (this.#position > MAX_HEADER_BYTES) throw new Error('the GGUF header is larger than 256 MiB');
    const rest = this.#buffer.subarray(this.#at);
    const chunk = Buffer.alloc(Math.max(n, 1 << 20));
    const read = readSync(this.#fd, chunk, 0, chunk.length, this.#position);
    this.#position += read;
    this.#buffer = Buffer.concat([rest, chunk.subarray(0, read)]);
    this.#at = 0;
    if (this.#buffer.length < n) throw new Error('the GGUF header ends early');
  }
  /** Where in the file the next byte read is. */
  offset(): number {
    return this.#position - (this.#buffer.length - this.#at);
  }
  bytes(n: number): Buffer {
    this.#need(n);
    const b = this.#buffer.subarray(this.#at, this.#at + n);
    this.#at += n;
    return b;
  }
  u32(): number {
    return this.bytes(4).readUInt32LE();
  }
  u64(): bigint {
    return this.bytes(8).readBigUInt64LE();
  }
  string(): string {
    const length = Number(this.u64());
    if (length > 64 * 2 ** 20) throw new Error('a GGUF string is longer than 64 MiB');
    return this.bytes(length).toString('utf8');
  }
  value(type: number): string | number | boolean | bigint {
    switch (type) {
      case 0:
        return this.bytes(1).readUInt8();
      case 1:
        return this.bytes(1).readInt8();
      case 2:
        return this.bytes(2).readUInt16LE();
      case 3:
        return this.bytes(2).readInt16LE();
      case 4:
        return this.u32();
      case 5:
        return this.bytes(4).readInt32LE();
      case 6:
        return this.bytes(4).readFloatLE();
      case 7:
        return this.bytes(1).readUInt8() !== 0;
      case 8:
        return this.string();
      case 10:
        return this.u64();
      case 11:
        return this.bytes(8).readBigInt64LE();
      case 12:
        return this.bytes(8).readDoubleLE();
      default:
        throw new Error(`unknown GGUF value type ${type}`);
    }
  }
  skipValue(type: number): void {
    if (type === 8) {
      this.bytes(Number(this.u64()));
      return;
    }
    const size = SCALAR_SIZE[type];
    if (size === undefined) throw new Error(`unknown GGUF array item type ${type}`);
    this.bytes(size);
  }
}
