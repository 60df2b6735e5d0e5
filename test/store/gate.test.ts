import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-root.js';

// Every write of a seal passes the seal gate (src/store/gate.ts). This reads the source: a new
// path that writes a seal, or calls something that does, without the gate fails here.

const src = packagePath('src');
const files = (function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') ? [path] : [];
  });
})(src);

/** SQL or code that writes a debate's seal columns, or a whole debate row with its seal. */
const WRITES_SEAL = [/update\s+debates\s+set[^`'"]*\bseal\b/i, /insert\s*\(\s*sqlite\s*,\s*'debates'/, /this\.#seal\(/];
/** What passes the gate: the store's own gate, a write that runs it, or the gate itself. */
const GATES = [/this\.#gate\(/, /\bsealGate\(/];
/** The upgrade that seals debates recorded before seals existed (src/store/adopt.ts): there is no earlier seal to check. */
const ALLOWED = new Set(['store/adopt.ts:adoptDebates', 'store/store.ts:#seal']);

interface Fn {
  file: string;
  name: string;
  node: ts.Node;
  text: string;
}

/** Every named function and method, with its source text. */
function functionsOf(file: string): Fn[] {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Fn[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name && node.body) {
      out.push({ file: relative(src, file), name: node.name.getText(sf), node, text: node.body.getText(sf) });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const all = files.flatMap(functionsOf);

/** Whether `fn` passes the gate before `offset` in its body (or anywhere, with no offset). */
function gatesBefore(fn: Fn, offset = Infinity): boolean {
  if (/this\.#write\(/.test(fn.text.slice(0, offset))) return true;
  return GATES.some((g) => {
    const m = g.exec(fn.text);
    return m !== null && m.index < offset;
  });
}

describe('the seal gate', () => {
  const writers = all.filter((fn) => WRITES_SEAL.some((p) => p.test(fn.text)) && !ALLOWED.has(`${fn.file}:${fn.name}`));

  it('finds the writers of seals (the store, resume, import)', () => {
    const names = writers.map((w) => `${w.file}:${w.name}`);
    expect(names).toEqual(expect.arrayContaining(['store/store.ts:#write', 'store/bundle.ts:insertRows']));
  });

  it('is passed by every function that writes a seal, or by every caller of one that does not', () => {
    const skipped: string[] = [];
    for (const writer of writers) {
      if (gatesBefore(writer, writer.text.search(/this\.#seal\(|update\s+debates|insert\s*\(\s*sqlite/i))) continue;
      const call = new RegExp(`(?<![\\w#.])(?:this\\.)?${writer.name.replace('#', '\\#')}\\(`);
      const callers = all.filter((fn) => fn !== writer && call.test(fn.text));
      expect(callers.length, `${writer.file}:${writer.name} writes a seal and nothing calls it`).toBeGreaterThan(0);
      for (const caller of callers) {
        if (!gatesBefore(caller, caller.text.search(call))) skipped.push(`${caller.file}:${caller.name} calls ${writer.name} without the gate`);
      }
    }
    expect(skipped).toEqual([]);
  });

  it('is the first thing the store does in every write transaction, before the rows change', () => {
    const store = all.filter((fn) => fn.file === 'store/store.ts');
    // Every write of the store, its last (finishDebate) included, is one `#write`.
    for (const name of ['#write']) {
      const fn = store.find((f) => f.name === name)!;
      const gate = fn.text.search(/this\.#gate\(/);
      expect(gate, name).toBeGreaterThan(-1);
      expect(gate, name).toBeLessThan(fn.text.search(/this\.#seal\(/));
      expect(gate, name).toBeLessThan(fn.text.search(/fn\(\)|FINISH_DEBATE/));
    }
  });
});
