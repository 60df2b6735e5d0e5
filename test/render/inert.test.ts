import { describe, expect, it } from 'vitest';
import { inert, inertDeep, inertLine, jsonText, markdownCell, markdownText } from '../../src/render/inert.js';
import { formatTable } from '../../src/render/table.js';

describe('inert', () => {
  it.each([
    ['an OSC ended by BEL (window title)', 'a\u001b]0;pwned\u0007b', 'ab'],
    ['an OSC ended by ST', 'a\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\b', 'alinkb'],
    ['a C1 OSC ended by C1 ST', 'a\u009d0;pwned\u009cb', 'ab'],
    ['a CSI that clears the screen', 'a\u001b[2Jb', 'ab'],
    ['SGR colour', '\u001b[31mred\u001b[0m', 'red'],
    ['a CSI with private parameters', 'a\u001b[?1049hb', 'ab'],
    ['a C1 CSI', 'a\u009b31mb', 'ab'],
    ['a DCS', 'a\u001bPq#0;2;0;0;0\u001b\\b', 'ab'],
    ['an APC', 'a\u001b_payload\u001b\\b', 'ab'],
    ['a terminal reset (ESC c)', 'a\u001bcb', 'ab'],
    ['a charset switch (ESC ( 0)', 'a\u001b(0b', 'ab'],
    ['carriage return, backspace, bell, DEL, NUL', 'a\rb\bc\u0007d\u007fe\u0000f', 'abcdef'],
    ['an unterminated OSC: its introducer goes, its text stays visible', 'a\u001b]0;title', 'a0;title'],
    ['a lone ESC at the end', 'a\u001b', 'a'],
  ])('removes %s', (_name, input, output) => {
    expect(inert(input)).toBe(output);
  });

  it('turns line and paragraph separators into newlines, and into spaces on one line', () => {
    expect(inert('a\u2028b\u2029c')).toBe('a\nb\nc');
    expect(inert('\u001b[2Ja\u2028b')).toBe('a\nb');
    expect(inertLine('a\u2028b\u2029\nc')).toBe('a b c');
    expect(inertDeep({ s: ['x\u2029y'] })).toEqual({ s: ['x\ny'] });
    expect(markdownCell('a\u2028b')).toBe('a b');
    expect(formatTable(['q'], [['a\u2028b\u2029c']])).toBe('q\na b c\n');
  });

  it('keeps newlines, tabs and every printable character, Unicode included', () => {
    const text = 'line 1\n\tline 2 — café ✓ 日本 <b>&amp;</b> | `x`';
    expect(inert(text)).toBe(text);
  });

  it('makes every string of a nested value inert and leaves numbers, nulls and the original alone', () => {
    const value = { a: ['x\u001b[2J', { b: 'y\u0007', n: 3, z: null }], c: true };
    expect(inertDeep(value)).toEqual({ a: ['x', { b: 'y', n: 3, z: null }], c: true });
    expect(value.a[0]).toBe('x\u001b[2J');
  });
});

describe('Markdown escaping', () => {
  it('escapes HTML, links, images, code fences, headings and table pipes', () => {
    expect(markdownText('<script>alert(1)</script>')).toBe('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(markdownText('<img src=x onerror=alert(1)>')).toBe('&lt;img src=x onerror=alert(1)&gt;');
    expect(markdownText('![x](http://tracker/p.png) [y](javascript:alert(1))')).toBe('!\\[x](http://tracker/p.png) \\[y](javascript:alert(1))');
    expect(markdownText('```\nfenced')).toBe('\\`\\`\\`\nfenced');
    expect(markdownText('# Synthesis\n  ## again')).toBe('\\# Synthesis\n  \\## again');
    expect(markdownText('a|b \\| c &amp;')).toBe('a\\|b \\\\\\| c &amp;amp;');
  });

  it('escapes a line of only = or only - under text, which would make it a setext heading', () => {
    expect(markdownText('Title\n===\nSubtitle\n---\nend')).toBe('Title\n\\===\nSubtitle\n\\---\nend');
    // One mark is a heading underline too, and indentation or trailing spaces do not stop it.
    expect(markdownText('a\n=\nb\n  -  \nc\n\t====')).toBe('a\n\\=\nb\n  \\-  \nc\n\t\\====');
    // A line separator ends the line before the underline as a newline does.
    expect(markdownText('Title\u2028===')).toBe('Title\n\\===');
  });

  it('leaves lists, emphasis and mixed lines as the model wrote them', () => {
    const prose = '- first point\n+ second\n* third\n1. numbered\n- - -\n***\n--- not a rule\na = b - c\n=-=';
    expect(markdownText(prose)).toBe(prose);
  });

  it('keeps a table cell on one line, with its pipes and HTML escaped', () => {
    expect(markdownCell('first\nsecond | <b>third</b>\r\n')).toBe('first second \\| &lt;b&gt;third&lt;/b&gt; ');
  });
});

describe('plain tables and JSON', () => {
  it('make table cells inert and single-line', () => {
    expect(formatTable(['q'], [['a\u001b]0;x\u0007\nb']])).toBe('q\na b\n');
  });

  it('writes line and paragraph separators in JSON as escapes, so a line reader cannot split a line there', () => {
    const text = jsonText({ s: 'a\u2028b\u2029c\u0085d' });
    expect(text).toBe('{"s":"a\\u2028b\\u2029c\\u0085d"}');
    expect(JSON.parse(text)).toEqual({ s: 'a\u2028b\u2029c\u0085d' });
  });

  it('writes C1 controls in JSON as escapes that parse back to the same text', () => {
    const text = jsonText({ s: 'a\u009b31m\u007f' });
    expect(text).toBe('{"s":"a\\u009b31m\\u007f"}');
    expect(JSON.parse(text)).toEqual({ s: 'a\u009b31m\u007f' });
  });
});

describe('direction controls', () => {
  const REVERSED = 'do \u202etpecca TON od\u202c now \u2066iso\u2069 \u200e\u200f\u061c \u202a\u202b\u202d';

  it('are written out visibly in terminal text, so `tpecca TON od` cannot read as `do NOT accept`', () => {
    expect(inert(REVERSED)).toBe('do <U+202E>tpecca TON od<U+202C> now <U+2066>iso<U+2069> <U+200E><U+200F><U+061C> <U+202A><U+202B><U+202D>');
    expect(inertDeep({ a: ['\u2067x'] })).toEqual({ a: ['<U+2067>x'] });
  });

  it('are written out and HTML-escaped in Markdown, in text and in table cells', () => {
    expect(markdownText('a\u202eb')).toBe('a&lt;U+202E&gt;b');
    expect(markdownCell('a\u2066b')).toBe('a&lt;U+2066&gt;b');
  });

  it('are \\u escapes in JSON, which parses back to the exact text', () => {
    const text = jsonText({ s: REVERSED });
    expect(text).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    expect(text).toContain('\\u202etpecca');
    expect(JSON.parse(text)).toEqual({ s: REVERSED });
  });
});
