/**
 * Decodes a reply's bytes the way llama.cpp's grammar read them while sampling. The grammar takes a
 * character's length from its first byte's high nibble and swallows that many bytes whatever they
 * are, so a byte-fallback model can produce `0xE2 0x22 0x7D`, which the grammar saw as one character
 * of a string and a standard decoder sees as U+FFFD, a closing quote and a brace. Decoding each such
 * unit to one character (U+FFFD when it is not valid UTF-8) gives back text with the structure and the
 * character counts the grammar enforced: every reply the grammar allowed stays usable.
 */
export function decodeAsGrammar(bytes: Uint8Array): string {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    const length = UNIT_LENGTH[lead >> 4]!;
    if (length === 1) {
      // A lone continuation byte (0x80–0xBF) is one character to the grammar too.
      out += lead < 0x80 ? String.fromCharCode(lead) : '\uFFFD';
      i += 1;
      continue;
    }
    const unit = bytes.subarray(i, Math.min(i + length, bytes.length));
    i += unit.length;
    try {
      const text = unit.length === length ? decoder.decode(unit) : '';
      out += [...text].length === 1 ? text : '\uFFFD';
    } catch {
      out += '\uFFFD';
    }
  }
  return out;
}

/** llama.cpp's `decode_utf8` lookup: bytes per character by the first byte's high nibble. */
const UNIT_LENGTH = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4] as const;
