/**
 * A port of numpy's legacy `RandomState` (MT19937 plus the legacy bounded
 * integer and double routines), so that suites generated in Python with
 * `np.random.seed(s)` can be regenerated bit for bit.
 */

const N = 624;
const M = 397;
const MATRIX_A = 0x9908b0df;
const UPPER_MASK = 0x80000000;
const LOWER_MASK = 0x7fffffff;
const UINT32_MAX = 0xffffffff;

export class RandomState {
  private readonly key = new Uint32Array(N);
  private pos = N;

  /** Seeds like `np.random.RandomState(seed)`: an integer or an array of integers, each in [0, 2^32 - 1]. */
  constructor(seed: number | readonly number[] = 0) {
    this.seed(seed);
  }

  /**
   * Same as numpy's legacy `seed`: an integer goes through the reference
   * `init_genrand`, an array through `init_by_array`.
   */
  seed(seed: number | readonly number[]): void {
    if (typeof seed === 'number') {
      assertUint32(seed, 'seed');
      this.initGenrand(seed);
      return;
    }
    if (seed.length === 0) throw new RangeError('Expected `seed` to be a non-empty array');
    seed.forEach((word, i) => assertUint32(word, `seed[${i}]`));
    this.initByArray(seed);
  }

  /** One tempered 32-bit output, as numpy's `next_uint32`. */
  nextUint32(): number {
    if (this.pos === N) this.generate();
    let y = this.key[this.pos++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** Two 32-bit outputs, the first one high, as numpy's `mt19937_next64`. */
  nextUint64(): bigint {
    const high = BigInt(this.nextUint32());
    return (high << 32n) | BigInt(this.nextUint32());
  }

  /** A double in [0, 1) with 53 random bits, as `RandomState.random_sample()`. */
  random(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /**
   * Integers in [low, high), as legacy `randint(low, high, size)` with the
   * default int64 dtype: masked rejection sampling over 32-bit draws, or
   * 64-bit draws when the range needs more than 32 bits.
   */
  randint(low: number, high: number): number;
  randint(low: number, high: number, size: number): number[];
  randint(low: number, high: number, size?: number): number | number[] {
    // `high` is exclusive, so 2^53 still yields only safe integers.
    if (!Number.isSafeInteger(low) || !Number.isInteger(high) || high > 2 ** 53) {
      throw new RangeError(`Expected \`low\` and \`high\` to be integers from -(2^53 - 1) to 2^53, got ${low} and ${high}`);
    }
    if (high <= low) throw new RangeError(`Expected \`low\` < \`high\`, got low=${low} and high=${high}`);
    const draw = this.boundedDraw(low, high);
    if (size === undefined) return draw();
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new RangeError(`Expected \`size\` to be a non-negative integer, got ${size}`);
    }
    const out: number[] = [];
    for (let i = 0; i < size; i++) out.push(draw());
    return out;
  }

  private boundedDraw(low: number, high: number): () => number {
    // Exact whenever the true span fits in 32 bits, since both ends are safe integers.
    const span = high - low - 1;
    if (span === 0) return () => low;
    if (span <= UINT32_MAX) {
      const mask = maskFor32(span);
      return () => {
        let value: number;
        // `>>> 0` keeps the masked draw unsigned when the mask has bit 31 set.
        do value = (this.nextUint32() & mask) >>> 0;
        while (value > span);
        return low + value;
      };
    }
    const range = BigInt(high) - BigInt(low) - 1n;
    const mask = maskFor64(range);
    return () => {
      let value: bigint;
      do value = this.nextUint64() & mask;
      while (value > range);
      return Number(BigInt(low) + value);
    };
  }

  private initGenrand(seed: number): void {
    const key = this.key;
    key[0] = seed;
    for (let i = 1; i < N; i++) {
      const prev = key[i - 1]!;
      key[i] = Math.imul(1812433253, prev ^ (prev >>> 30)) + i;
    }
    this.pos = N;
  }

  private initByArray(initKey: readonly number[]): void {
    const key = this.key;
    this.initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(N, initKey.length); k > 0; k--) {
      const prev = key[i - 1]!;
      key[i] = (key[i]! ^ Math.imul(prev ^ (prev >>> 30), 1664525)) + initKey[j]! + j;
      i++;
      j++;
      if (i >= N) {
        key[0] = key[N - 1]!;
        i = 1;
      }
      if (j >= initKey.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = key[i - 1]!;
      key[i] = (key[i]! ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) - i;
      i++;
      if (i >= N) {
        key[0] = key[N - 1]!;
        i = 1;
      }
    }
    key[0] = 0x80000000;
    this.pos = N;
  }

  private generate(): void {
    const key = this.key;
    for (let i = 0; i < N; i++) {
      const y = (key[i]! & UPPER_MASK) | (key[(i + 1) % N]! & LOWER_MASK);
      key[i] = key[(i + M) % N]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
    }
    this.pos = 0;
  }
}

/** Smallest 2^k - 1 that is >= max (numpy's `gen_mask`), for a 32-bit max. */
function maskFor32(max: number): number {
  let mask = max;
  for (const shift of [1, 2, 4, 8, 16]) mask |= mask >>> shift;
  return mask >>> 0;
}

function maskFor64(max: bigint): bigint {
  let mask = max;
  for (const shift of [1n, 2n, 4n, 8n, 16n, 32n]) mask |= mask >> shift;
  return mask;
}

function assertUint32(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 0 || value > UINT32_MAX) {
    throw new RangeError(`Expected \`${name}\` to be an integer from 0 to 2^32 - 1, got ${value}`);
  }
}
