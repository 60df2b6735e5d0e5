import { afterAll, describe, expect, it } from 'vitest';
import { escapeHtml } from '../../src/bench/html.js';
import { html } from '../../src/serve/html.js';
import { scriptedResponder, stageOf } from '../helpers/panel.js';
import { recordDebate, type RunningViewer, startViewer, tempRecord } from '../helpers/viewer.js';

const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
let viewer: RunningViewer | null = null;

afterAll(async () => {
  await viewer?.close();
});

describe('direction controls in HTML', () => {
  it('are shown as text inside an isolating element in page text', () => {
    const out = html`<td>${'do \u202etpecca TON od'}</td>`.value;
    expect(out).not.toMatch(BIDI);
    expect(out).toBe('<td>do <bdi class="ctl" title="a direction control character, shown instead of applied">&lt;U+202E&gt;</bdi>tpecca TON od</td>');
  });

  it('are written out as escaped text in an attribute and in the title, where no element can stand', () => {
    expect(html`<a title="${'x\u2066y'}">z</a>`.value).toBe('<a title="x&lt;U+2066&gt;y">z</a>');
    expect(html`<title>${'q\u202e'} · Conclave</title>`.value).toBe('<title>q&lt;U+202E&gt; · Conclave</title>');
    expect(escapeHtml('<b>\u200f')).toBe('&lt;b&gt;&lt;U+200F&gt;');
  });

  it('show other control characters, which have no glyph, written out in the same element instead of as a tofu box', () => {
    const out = html`<td>${'bell\u0007 nul\u0000 del\u007f c1\u0085 tab\tline\n'}</td>`.value;
    expect(out).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/);
    for (const c of ['0007', '0000', '007F', '0085']) expect(out).toContain(`<bdi class="ctl" title="a control character, shown instead of applied">&lt;U+${c}&gt;</bdi>`);
    expect(out).toContain('tab\tline\n');
    expect(html`<a title="${'x\u0007'}">z</a>`.value).toBe('<a title="x&lt;U+0007&gt;">z</a>');
  });

  it('never reach a page of the viewer as characters, from the question or a reply', async () => {
    const file = tempRecord();
    const reversed = 'do \u202etpecca TON od\u202c the plan';
    const script = scriptedResponder([0.9], (req) => (stageOf(req) === 'opening' ? JSON.stringify({ position: reversed, reasoning: reversed, confidence: 50 }) : undefined));
    const id = await recordDebate(file, script.respond, { question: `Q ${reversed}` });
    viewer = await startViewer(file);
    for (const path of ['/', `/debates/${id}`]) {
      const page = await (await fetch(`${viewer.url}${path}`)).text();
      expect(page, path).not.toMatch(BIDI);
      expect(page, path).toContain('<bdi class="ctl" title="a direction control character, shown instead of applied">&lt;U+202E&gt;</bdi>tpecca TON od');
    }
  });
});
