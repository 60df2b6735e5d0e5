#!/usr/bin/env node
// Fails when files under src/ import each other in a loop (type-only imports included:
// a circle of types is still a knot between layers). Prints each circle, smallest first.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// `node scripts/check-cycles.mjs [DIR]`: DIR defaults to the package's src/.
const srcDir = process.argv[2] ? resolve(process.argv[2]) : join(root, 'src');

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

const files = walk(srcDir);
const known = new Set(files);
const edges = new Map(files.map((file) => [file, []]));
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  for (const match of text.matchAll(importPattern)) {
    const spec = match[1] ?? match[2];
    const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
    if (known.has(target)) edges.get(file).push(target);
  }
}

// Tarjan's strongly connected components: every component with more than one file is a circle.
let index = 0;
const order = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const circles = [];
function visit(file) {
  order.set(file, index);
  low.set(file, index);
  index += 1;
  stack.push(file);
  onStack.add(file);
  for (const next of edges.get(file)) {
    if (!order.has(next)) {
      visit(next);
      low.set(file, Math.min(low.get(file), low.get(next)));
    } else if (onStack.has(next)) {
      low.set(file, Math.min(low.get(file), order.get(next)));
    }
  }
  if (low.get(file) === order.get(file)) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || edges.get(file).includes(file)) circles.push(component);
  }
}
for (const file of files) if (!order.has(file)) visit(file);

if (circles.length === 0) {
  console.log(`No import circles among ${files.length} files under src/.`);
  process.exit(0);
}
circles.sort((a, b) => a.length - b.length);
console.error(`${circles.length} import circle(s) under src/:`);
for (const circle of circles) {
  console.error(`- ${circle.length} files: ${circle.map((f) => relative(srcDir, f)).sort().join(', ')}`);
}
console.error('Move the types both sides share below both, or let the lower layer take a registration instead of importing the higher one.');
process.exit(1);
