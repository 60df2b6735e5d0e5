import { escapeHtml, escapeMarkup } from '../bench/html.js';
import { bidiName, replaceBidi } from '../render/inert.js';

/**
 * Markup built by the `html` template: interpolated values are escaped unless they
 * are themselves `Html`. Model output can only ever reach a page as text.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

/** A direction control in page text: written out, in an element of its own that isolates it. */
const isolatedBidi = (c: string): string => `<bdi class="ctl" title="a direction control character, shown instead of applied">${escapeMarkup(bidiName(c))}</bdi>`;

/**
 * Other control characters (C0 but tab, newline and carriage return; DEL; C1) have no glyph: a browser
 * draws a tofu box or nothing. They are written out as `<U+0007>` too, so a reader sees what is there.
 */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
const isolatedControl = (c: string): string => `<bdi class="ctl" title="a control character, shown instead of applied">${escapeMarkup(bidiName(c))}</bdi>`;

function renderPart(part: Part, inText: boolean): string {
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map((p) => renderPart(p, inText)).join('');
  if (part === null || part === undefined || part === false || part === true) return '';
  // In an attribute or the title no element can stand: the control is written out as text there.
  const text = String(part);
  return inText ? replaceBidi(escapeMarkup(text), isolatedBidi).replace(CONTROL, isolatedControl) : escapeHtml(text.replace(CONTROL, bidiName));
}

/** Whether a value placed after this markup lands in element text (not an attribute value, nor the title). */
function isTextContext(before: string): boolean {
  return !/=\s*["']?[^"'<>]*$/.test(before.slice(-200)) && !/<title>[^<]*$/.test(before.slice(-200));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += renderPart(value, isTextContext(out)) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** Markup the caller vouches for (built only from numbers and fixed strings). */
export function trusted(markup: string): Html {
  return new Html(markup);
}

export interface PageOptions {
  title: string;
  body: Html;
  /** Extra attributes on <body>, read by app.js. */
  data?: Record<string, string>;
}

export function page(opts: PageOptions): string {
  const data = Object.entries(opts.data ?? {}).map(([k, v]) => html` data-${trusted(k.replace(/[^a-z-]/g, ''))}="${v}"`);
  return `<!doctype html>
${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${opts.title} · Conclave</title>
<link rel="stylesheet" href="/style.css">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<script src="/app.js" defer></script>
</head>
<body${data}>
<header class="top"><a href="/">Conclave</a></header>
<main>
${opts.body}
</main>
</body>
</html>`}
`;
}

export function errorPage(status: number, title: string, detail: string): string {
  return page({
    title,
    body: html`<h1>${title}</h1>
<p class="error">${detail}</p>
<p><a href="/">All debates and bench runs</a></p>`,
  });
}

export function formatTime(ms: number | null): string {
  if (ms === null) return '-';
  // A time edited by hand into text, or out of range, is shown as `?` rather than failing the page.
  const at = typeof ms === 'number' ? new Date(ms) : null;
  return at === null || Number.isNaN(at.getTime()) ? '?' : at.toISOString().slice(0, 19).replace('T', ' ');
}

export function formatSeconds(ns: number | null): string {
  return ns === null ? '-' : `${(ns / 1e9).toFixed(2)} s`;
}

export function fixed(x: number | null | undefined, digits = 2): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);
}
