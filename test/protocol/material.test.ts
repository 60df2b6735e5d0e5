import { describe, expect, it } from 'vitest';
import { admits, defaultPriority, pressureAt } from '../../src/protocol/budget.js';
import { type Attachment, materialFor, splitSections } from '../../src/protocol/material.js';
import { migrationPlan } from '../helpers/material.js';

const file = (name: string, content: string): Attachment => ({ name, content, bytes: content.length, sha256: 'x' });
const ask = { question: 'Should we migrate the billing store?', persona: null, focus: '', allowanceTokens: 2000 };

describe('material sections and excerpts', () => {
  it('cuts Markdown at its headings, the title joining the first section', () => {
    const sections = splitSections(migrationPlan(4));
    expect(sections.map((s) => s.text.split('\n')[0])).toEqual(['# Billing store migration plan', '## 2. Rollback', '## 3. Backups', '## 4. Downtime']);
    expect(sections[0]!.text).toContain('## 1. Scope');
  });

  it('cuts plain text at paragraphs, grouped, and never loses text', () => {
    const text = Array.from({ length: 20 }, (_, i) => `Paragraph ${i} ${'word '.repeat(40)}`.trim()).join('\n\n');
    const sections = splitSections(text);
    expect(sections.length).toBeGreaterThan(1);
    expect(sections.map((s) => s.text).join('\n\n')).toBe(text);
  });

  it('inlines material that fits and marks it as whole', () => {
    const m = materialFor([file('note.md', 'Short note.')], { ...ask, keep: 'all' });
    expect(m.text).toContain('[note.md, whole, 11 characters]\nShort note.');
    expect(m.uses[0]).toMatchObject({ mode: 'inline', keptChars: 11 });
  });

  it('excerpts long material by the focus, keeps document order and marks what it kept', () => {
    const plan = file('plan.md', migrationPlan(30));
    const m = materialFor([plan], { ...ask, focus: 'rollback drill replay tool', keep: 'all' });
    const use = m.uses[0]!;
    expect(use.mode).toBe('excerpt');
    expect(use.sections).toEqual([...use.sections].sort((a, b) => a - b));
    expect(m.text).toContain(`[Excerpt of plan.md: sections ${use.sections.join(', ')} of 30 — ${use.keptChars.toLocaleString('en-US')} of ${plan.content.length.toLocaleString('en-US')} characters]`);
    expect(m.text).toContain('The rollback drill runs twice');
    expect(m.text.length).toBeLessThan(2000 * 3.5);
  });

  it('keeps less under budget pressure: primary sections only, then one key section', () => {
    const plan = file('plan.md', migrationPlan(30));
    const kept = (keep: 'all' | 'primary' | 'key') => materialFor([plan], { ...ask, focus: 'rollback', keep }).uses[0]!.keptChars;
    expect(kept('primary')).toBeLessThan(kept('all'));
    expect(kept('key')).toBeLessThan(kept('primary'));
    expect(materialFor([plan], { ...ask, focus: 'rollback', keep: 'key' }).uses[0]!.sections).toHaveLength(1);
    // Short material is no exception: under pressure it is excerpted too.
    expect(materialFor([file('note.md', migrationPlan(3))], { ...ask, keep: 'primary' }).uses[0]!.mode).toBe('excerpt');
  });

  it('never keeps a title line alone as the key section: the headings stay with their first paragraph of text', () => {
    // The title over the first section joins it; the key section is cut to its first paragraph with content.
    const plan = file('plan.md', `# Billing store migration plan\n\n## 1. Scope and billing store\n\nThe billing store moves to Postgres in one cutover.\n\nMore on scope.\n\n${migrationPlan(8).split('\n').slice(1).join('\n')}`);
    const m = materialFor([plan], { ...ask, question: 'Which scope for the billing store?', focus: 'scope', keep: 'key' });
    expect(m.uses[0]!.sections).toEqual([1]);
    expect(m.text).toContain('## 1. Scope and billing store\n\nThe billing store moves to Postgres in one cutover.');
    expect(m.text).not.toContain('More on scope.');
  });
});

describe('budget rules', () => {
  it('takes an agent\'s priority from its own field, else from its role, else normal', () => {
    expect(defaultPriority({ priority: 'low', role: 'lead' })).toBe('low');
    expect(defaultPriority({ role: 'lead' })).toBe('high');
    expect(defaultPriority({ role: 'filter' })).toBe('high');
    expect(defaultPriority({ role: 'analyst' })).toBe('low');
    expect(defaultPriority({ role: 'reviewer' })).toBe('normal');
    expect(defaultPriority({})).toBe('normal');
  });

  it('changes nothing below 80%, then cuts secondary excerpts, peers\' reasoning, and primary excerpts in that order', () => {
    expect(pressureAt(7999, 10000)).toMatchObject({ keep: 'all', dropReasoning: false });
    expect(pressureAt(8000, 10000)).toMatchObject({ keep: 'primary', dropReasoning: false });
    expect(pressureAt(9000, 10000)).toMatchObject({ keep: 'primary', dropReasoning: true });
    expect(pressureAt(9500, 10000)).toMatchObject({ keep: 'key', dropReasoning: true });
    expect(pressureAt(50000, null)).toMatchObject({ keep: 'all', dropReasoning: false });
  });

  it('skips a low call whose estimate would pass the budget, a normal one once it is spent, and never an essential or high one', () => {
    expect(admits('low', 9000, 1500, 10000).ok).toBe(false);
    expect(admits('normal', 9000, 1500, 10000).ok).toBe(true);
    expect(admits('normal', 10000, 10, 10000).ok).toBe(false);
    expect(admits('high', 20000, 10, 10000).ok).toBe(true);
    expect(admits('essential', 20000, 10, 10000).ok).toBe(true);
    expect(admits('low', 9_999_999, 10, null).ok).toBe(true);
  });
});
