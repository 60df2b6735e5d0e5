/**
 * A tiny random-weight LLaMA model written from the GGUF spec (ggml `docs/gguf.md`, version 3):
 * 2 layers, hidden size 64, 4 heads, F32 weights from a fixed seed, and a byte-fallback SentencePiece
 * vocabulary (`<unk>`, `<s>`, `</s>`, the 256 `<0xXX>` byte tokens, `▁` and printable ASCII: 354 tokens).
 * The same options write the same bytes every time. It loads and generates with the real llama.cpp;
 * what it says is noise, which is the point: the engine must record whatever comes back. One
 * dimension carries a constant that leans the model toward closing its strings (see `quoteBias`).
 */
import { writeFileSync } from 'node:fs';
import { mulberry32 } from '../../src/protocol/random.js';

export interface TinyModelOptions {
  seed?: number;
  contextLength?: number;
  /** `tokenizer.chat_template`; the default is ChatML, which node-llama-cpp recognises. */
  chatTemplate?: string | null;
  name?: string;
  /**
   * How strongly the model favours closing what it writes: dimension 0 of every embedding is a constant that
   * no layer writes to, and the output rows of `"`, `}`, `]`, `,` and `</s>` weigh it (`"` at twice it, the others at 0.8, letters
   * at 0.9, so strings hold a few words and end). 0 gives a model with no lean.
   * The default makes replies short, so a debate under small token limits usually finishes its JSON.
   */
  quoteBias?: number;
  /**
   * A thinking model, qwen3-style: `<think>` and `</think>` join the vocabulary, the chat template drops
   * earlier turns' thoughts as qwen3's does, and the model leans toward opening a thought first and closing it soon.
   */
  thinking?: boolean;
}

/** ChatML that keeps only what follows `</think>` of earlier model turns, as qwen3's template does. */
const CHATML_THINKING =
  "{% for message in messages %}{% set content = message['content'] %}{% if message['role'] == 'assistant' and '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{ '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const CHATML =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const GGUF_TYPE = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10 } as const;
const GGML_F32 = 0;
const ALIGNMENT = 32;

type Value =
  | { t: 'u32' | 'i32' | 'f32' | 'u64'; v: number }
  | { t: 'bool'; v: boolean }
  | { t: 'string'; v: string }
  | { t: 'array'; of: 'string'; v: string[] }
  | { t: 'array'; of: 'f32' | 'i32'; v: number[] };

/** The vocabulary: ids 0–2 are unk/bos/eos, 3–258 the byte tokens, then `▁` and printable ASCII. */
export function tinyVocab(thinking = false): { tokens: string[]; types: number[]; scores: number[] } {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6);
  }
  tokens.push('\u2581');
  types.push(1);
  for (let c = 0x21; c <= 0x7e; c++) {
    tokens.push(String.fromCharCode(c));
    types.push(1);
  }
  if (thinking) {
    tokens.push('<think>', '</think>');
    types.push(4, 4);
  }
  return { tokens, types, scores: tokens.map((_, i) => (i < 259 ? 0 : -i)) };
}

/** The bytes of the tiny model. */
export function tinyGguf(opts: TinyModelOptions = {}): Buffer {
  const embd = 64;
  const layers = 2;
  const heads = 4;
  const ff = 128;
  const vocab = tinyVocab(opts.thinking === true);
  const nVocab = vocab.tokens.length;
  const random = mulberry32(opts.seed ?? 20_260_101);
  const chatTemplate = opts.chatTemplate === undefined ? (opts.thinking ? CHATML_THINKING : CHATML) : opts.chatTemplate;

  const kv: [string, Value][] = [
    ['general.architecture', { t: 'string', v: 'llama' }],
    ['general.name', { t: 'string', v: opts.name ?? 'conclave-tiny' }],
    ['general.alignment', { t: 'u32', v: ALIGNMENT }],
    ['general.file_type', { t: 'u32', v: 0 }],
    ['llama.context_length', { t: 'u32', v: opts.contextLength ?? 8192 }],
    ['llama.embedding_length', { t: 'u32', v: embd }],
    ['llama.block_count', { t: 'u32', v: layers }],
    ['llama.feed_forward_length', { t: 'u32', v: ff }],
    ['llama.attention.head_count', { t: 'u32', v: heads }],
    ['llama.attention.head_count_kv', { t: 'u32', v: heads }],
    ['llama.attention.layer_norm_rms_epsilon', { t: 'f32', v: 1e-5 }],
    ['llama.rope.dimension_count', { t: 'u32', v: embd / heads }],
    ['llama.rope.freq_base', { t: 'f32', v: 10_000 }],
    ['llama.vocab_size', { t: 'u32', v: nVocab }],
    ['tokenizer.ggml.model', { t: 'string', v: 'llama' }],
    ['tokenizer.ggml.tokens', { t: 'array', of: 'string', v: vocab.tokens }],
    ['tokenizer.ggml.scores', { t: 'array', of: 'f32', v: vocab.scores }],
    ['tokenizer.ggml.token_type', { t: 'array', of: 'i32', v: vocab.types }],
    ['tokenizer.ggml.unknown_token_id', { t: 'u32', v: 0 }],
    ['tokenizer.ggml.bos_token_id', { t: 'u32', v: 1 }],
    ['tokenizer.ggml.eos_token_id', { t: 'u32', v: 2 }],
    ['tokenizer.ggml.add_bos_token', { t: 'bool', v: true }],
    ['tokenizer.ggml.add_eos_token', { t: 'bool', v: false }],
    ...(chatTemplate === null ? [] : [['tokenizer.chat_template', { t: 'string', v: chatTemplate }] as [string, Value]]),
  ];

  const tensors: { name: string; dims: number[]; init: 'one' | 'random' }[] = [
    { name: 'token_embd.weight', dims: [embd, nVocab], init: 'random' },
    { name: 'output_norm.weight', dims: [embd], init: 'one' },
    { name: 'output.weight', dims: [embd, nVocab], init: 'random' },
  ];
  for (let l = 0; l < layers; l++) {
    tensors.push(
      { name: `blk.${l}.attn_norm.weight`, dims: [embd], init: 'one' },
      { name: `blk.${l}.attn_q.weight`, dims: [embd, embd], init: 'random' },
      { name: `blk.${l}.attn_k.weight`, dims: [embd, embd], init: 'random' },
      { name: `blk.${l}.attn_v.weight`, dims: [embd, embd], init: 'random' },
      { name: `blk.${l}.attn_output.weight`, dims: [embd, embd], init: 'random' },
      { name: `blk.${l}.ffn_norm.weight`, dims: [embd], init: 'one' },
      { name: `blk.${l}.ffn_gate.weight`, dims: [embd, ff], init: 'random' },
      { name: `blk.${l}.ffn_up.weight`, dims: [embd, ff], init: 'random' },
      { name: `blk.${l}.ffn_down.weight`, dims: [ff, embd], init: 'random' },
    );
  }

  const bias = opts.quoteBias ?? 1;
  const quote = vocab.tokens.indexOf('"');
  const open = vocab.tokens.indexOf('<think>');
  const close = vocab.tokens.indexOf('</think>');
  const closers = new Set(['"', '}', ']', ','].map((c) => vocab.tokens.indexOf(c)).concat(2));
  // Weights are stored with dims[0] varying fastest: element (input i, output j) is at j * dims[0] + i.
  const lean = (name: string, dims: number[], data: Buffer): void => {
    const set = (index: number, value: number): void => void data.writeFloatLE(value, index * 4);
    if (name === 'token_embd.weight') for (let t = 0; t < nVocab; t++) set(t * embd, 4);
    if (name.endsWith('attn_output.weight') || name.endsWith('ffn_down.weight')) for (let i = 0; i < dims[0]!; i++) set(i, 0);
    if (name === 'output.weight') for (let t = 0; t < nVocab; t++) set(t * embd, t === open ? bias * 1.5 : t === close ? bias * 1.9 : t === quote ? bias * 2 : closers.has(t) ? bias * 0.8 : /^[a-z]$/i.test(vocab.tokens[t]!) ? bias * 0.9 : 0);
  };

  const out = new Writer();
  out.raw(Buffer.from('GGUF', 'latin1'));
  out.u32(3);
  out.u64(tensors.length);
  out.u64(kv.length);
  for (const [key, value] of kv) {
    out.string(key);
    out.value(value);
  }
  let offset = 0;
  const datas: Buffer[] = [];
  for (const t of tensors) {
    out.string(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(GGML_F32);
    out.u64(offset);
    const count = t.dims.reduce((a, b) => a * b, 1);
    const data = Buffer.alloc(count * 4);
    // Matrices scaled by their fan-in, so no layer drowns the residual stream; embeddings uniform in ±0.5.
    const scale = t.name === 'token_embd.weight' || t.name === 'output.weight' ? 0.5 : 1 / Math.sqrt(t.dims[0]!);
    for (let i = 0; i < count; i++) data.writeFloatLE(t.init === 'one' ? 1 : (random() * 2 - 1) * scale, i * 4);
    if (bias > 0) lean(t.name, t.dims, data);
    datas.push(data, Buffer.alloc(pad(data.length)));
    offset += data.length + pad(data.length);
  }
  out.raw(Buffer.alloc(pad(out.length)));
  for (const d of datas) out.raw(d);
  return out.buffer();
}

/** Writes the tiny model to `path` and returns the path. */
export function writeTinyGguf(path: string, opts: TinyModelOptions = {}): string {
  writeFileSync(path, tinyGguf(opts));
  return path;
}

function pad(length: number): number {
  return (ALIGNMENT - (length % ALIGNMENT)) % ALIGNMENT;
}


class Writer {
  #parts: Buffer[] = [];
  length = 0;
  raw(b: Buffer): void {
    this.#parts.push(b);
    this.length += b.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.raw(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.raw(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.raw(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.raw(b);
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.raw(bytes);
  }
  value(v: Value): void {
    this.u32(GGUF_TYPE[v.t]);
    switch (v.t) {
      case 'u32':
        return this.u32(v.v);
      case 'i32':
        return this.i32(v.v);
      case 'f32':
        return this.f32(v.v);
      case 'u64':
        return this.u64(v.v);
      case 'bool':
        return this.raw(Buffer.from([v.v ? 1 : 0]));
      case 'string':
        return this.string(v.v);
      case 'array':
        this.u32(GGUF_TYPE[v.of]);
        this.u64(v.v.length);
        for (const item of v.v as (string | number)[]) {
          if (v.of === 'string') this.string(item as string);
          else if (v.of === 'f32') this.f32(item as number);
          else this.i32(item as number);
        }
    }
  }
  buffer(): Buffer {
    return Buffer.concat(this.#parts);
  }
}
