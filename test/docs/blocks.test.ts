import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCommandLine, main } from '../../src/cli/main.js';
import { loadHostsFile } from '../../src/config/load-hosts.js';
import { readAgentFile } from '../../src/config/agent-files.js';
import { builtinPresetNames, loadPreset, parsePreset } from '../../src/config/load-preset.js';
import { parseSuite } from '../../src/bench/suite.js';
import { packagePath } from '../../src/package-root.js';
import { loadSimScript } from '../../src/sim/script.js';
import { capture, runCli } from '../helpers/cli.js';

/**
 * Every fenced block in README.md and docs/ says what it is in its info string:
 * `sh` runs, `markdown agent` / `yaml preset` / `yaml preset-fragment` / `yaml hosts` / `yaml sim-script`
 * and `jsonl suite` are validated by the code that reads them, `ts` is checked
 * against the library's exports, and `text` / `jsonc` are illustrations.
 */
interface Block {
  file: string;
  line: number;
  info: string;
  body: string;
}

const KNOWN = new Set(['sh', 'markdown agent', 'yaml preset', 'yaml preset-fragment', 'yaml hosts', 'yaml sim-script', 'jsonl suite', 'ts', 'text', 'jsonc']);

function docFiles(): string[] {
  return ['README.md', ...readdirSync(packagePath('docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
}

function blocks(): Block[] {
  const out: Block[] = [];
  for (const file of docFiles()) {
    const lines = readFileSync(packagePath(file), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^```(.*)$/.exec(lines[i] ?? '');
      if (!open) continue;
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !(lines[i] ?? '').startsWith('```'); i++) body.push(lines[i] ?? '');
      out.push({ file, line: start + 1, info: (open[1] ?? '').trim(), body: body.join('\n') });
    }
  }
  return out;
}

const all = blocks();
const of = (info: string) => all.filter((b) => b.info === info).map((b) => [`${b.file}:${b.line}`, b] as const);

/** Shell lines of a block: continuations joined, comments and blank lines dropped. */
function shellLines(body: string): string[] {
  return body
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** Splits a shell line into words, honouring single and double quotes; redirections end it. */
function words(line: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const m of line.matchAll(re)) {
    const word = m[1] ?? m[2] ?? m[3] ?? '';
    if (m[3] !== undefined && /^[<>|]/.test(word)) break;
    out.push(word);
  }
  return out;
}

let dir = '';
let demoId = '';
const packageJson = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { scripts: Record<string, string> };

const cli = (args: string[]) => runCli(args, dir);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'conclave-docs-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the docs', () => {
  it('list every built-in preset wherever they list them', () => {
    const names = builtinPresetNames();
    const lists = docFiles().flatMap((file) => [...readFileSync(packagePath(file), 'utf8').matchAll(/Built-in presets: ([^.]*)\./g)].map((m) => ({ file, listed: m[1]!.split(', ') })));
    expect(lists.length).toBeGreaterThan(0);
    for (const { file, listed } of lists) expect({ file, listed }).toEqual({ file, listed: names });
  });

  it('tag every fenced block with a kind the docs test knows', () => {
    const unknown = all.filter((b) => !KNOWN.has(b.info)).map((b) => `${b.file}:${b.line} \`\`\`${b.info}`);
    expect(unknown).toEqual([]);
    expect(all.filter((b) => b.info === 'sh').length).toBeGreaterThan(5);
  });

  it.each(of('yaml preset'))('%s is a valid preset', (_where, block) => {
    const { preset } = parsePreset(parseYaml(block.body), block.file);
    expect(preset.name).toBeTruthy();
  });

  it.each(of('yaml preset-fragment'))('%s is valid inside a preset', (_where, block) => {
    const fragment = parseYaml(block.body) as Record<string, unknown>;
    const base = loadPreset('cluster-vote').preset as unknown as Record<string, unknown>;
    const merged: Record<string, unknown> = { ...base, ...fragment };
    // A fragment's agents stand for the ones with the same id in the base panel.
    const agents = (fragment.agents as { id: string }[] | undefined) ?? [];
    merged.agents = (base.agents as { id: string }[]).map((a) => agents.find((f) => f.id === a.id) ?? a);
    expect(agents.every((f) => (base.agents as { id: string }[]).some((a) => a.id === f.id))).toBe(true);
    expect(() => parsePreset(merged, block.file)).not.toThrow();
  });

  it.each(of('markdown agent'))('%s is a valid agent file', (_where, block) => {
    writeFileSync(join(dir, 'agent.md'), block.body);
    expect(readAgentFile('agent.md', dir, 0)).toHaveProperty('persona');
  });

  it.each(of('yaml hosts'))('%s is a valid hosts file', (_where, block) => {
    const file = join(dir, 'hosts.yaml');
    writeFileSync(file, block.body);
    expect(loadHostsFile(file).length).toBeGreaterThan(0);
  });

  it.each(of('yaml sim-script'))('%s is a valid simulator script', async (_where, block) => {
    const file = join(dir, 'script.yaml');
    writeFileSync(file, block.body);
    expect((await loadSimScript(file)).models.length).toBeGreaterThan(0);
  });

  it.each(of('jsonl suite'))('%s is a valid bench suite', (_where, block) => {
    expect(parseSuite(block.body, block.file).length).toBe(block.body.trim().split('\n').length);
  });

  it.each(of('ts'))('%s imports only what the library exports', async (_where, block) => {
    const index = (await import('../../src/index.js')) as Record<string, unknown>;
    const imported = [...block.body.matchAll(/import \{([^}]*)\} from 'conclave'/g)].flatMap((m) => (m[1] ?? '').split(',').map((s) => s.trim()));
    expect(imported.length).toBeGreaterThan(0);
    for (const name of imported) expect(index[name], name).toBeDefined();
  });

  it('runs the README library example against the simulator, and it prints the computed confidence', async () => {
    const block = all.find((b) => b.file === 'README.md' && b.info === 'ts' && b.body.includes('runDebate('));
    expect(block).toBeDefined();
    const index = (await import('../../src/index.js')) as Record<string, unknown>;
    const { demoResponder, simModelsFor } = await import('../../src/sim/demo.js');
    const { preset } = loadPreset('tech-decision');
    const sim = await (index.startSimulator as typeof import('../../src/sim/index.js').startSimulator)({ port: 0, models: simModelsFor([preset]), respond: demoResponder(preset), tokenMs: 0 });
    try {
      const imported = /import \{([^}]*)\} from 'conclave';/.exec(block!.body)![1]!.split(',').map((s) => s.trim());
      const body = block!.body
        .replace(/^import .*$/m, '')
        .replace('http://127.0.0.1:11434', sim.url)
        .replace("'debates.db'", JSON.stringify(join(dir, 'library-example.db')));
      const printed: unknown[][] = [];
      const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;
      await new AsyncFunction(...imported, 'console', body)(...imported.map((n) => index[n]), { log: (...v: unknown[]) => printed.push(v) });
      const store = (index.openStore as typeof import('../../src/store/open.js').openStore)(join(dir, 'library-example.db'), { readonly: true });
      const [debate] = store.listDebates();
      const expected = (index.debateDocument as typeof import('../../src/render/document.js').debateDocument)(store.getDebate(debate!.id)) as {
        synthesis?: { synthesis?: { recommendation: string } };
        confidence: { level: string; judgeScore: number | null } | null;
      };
      store.close();
      expect(expected.confidence).not.toBeNull();
      expect(printed).toEqual([[expected.synthesis?.synthesis?.recommendation], [expected.confidence!.level, expected.confidence!.judgeScore]]);
    } finally {
      await sim.close();
    }
  });

  it.each([
    ['the card after `conclave demo`', 'RECOMMENDATION', []],
    ['the cluster vote of `conclave demo --preset cluster-vote`', 'CLUSTER VOTE', ['--preset', 'cluster-vote']],
  ] as const)("README's excerpt of %s is what the demo prints now", async (_what, opening, args) => {
    const block = all.find((b) => b.file === 'README.md' && b.info === 'text' && b.body.startsWith(opening));
    expect(block).toBeDefined();
    const r = await cli(['demo', ...args, '--db', join(dir, `excerpt-${args.length}.db`), '--quiet', '--token-ms', '0']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(block!.body);
  });

  it("README's install section says how node-gyp finds Node's headers offline, with a folder the air-gapped section makes", () => {
    const readme = readFileSync(packagePath('README.md'), 'utf8');
    const install = readme.slice(readme.indexOf('## Install'), readme.indexOf('## Installing on an air-gapped machine'));
    const named = /npm_config_nodedir=\$PWD\/(\S+) npm ci/.exec(install)?.[1];
    expect(named).toBeDefined();
    // npm runs node-gyp over better-sqlite3 even when its prebuilt binary matches: the section must not promise an install without headers.
    expect(install).toMatch(/runs node-gyp over `better-sqlite3` all the same[\s\S]*compiles nothing, yet it still wants Node's headers/);
    expect(install).not.toMatch(/needs neither the headers nor a compiler/);
    // The folder is the registry's Node package as the air-gapped section unpacks it.
    expect(readme).toContain(`npm run check:release -- --node ${named}`);
  });

  it('shows with `demo --preset tension-map` the whole map, which the plain demo leaves out', async () => {
    const map = await cli(['demo', '--preset', 'tension-map', '--db', join(dir, 'map.db'), '--quiet', '--token-ms', '0']);
    const plain = await cli(['demo', '--db', join(dir, 'plain.db'), '--quiet', '--token-ms', '0']);
    expect([map.code, plain.code]).toEqual([0, 0]);
    for (const part of ['THE WHOLE MAP', '### Targeted exchange on T1', '> Now holds:', '### Load-bearing claims', '| T1 | 9 | factual |']) {
      expect(map.stdout).toContain(part);
      expect(plain.stdout).not.toContain(part);
    }
  });

  it.each(of('sh'))('%s: every command runs or is accepted by the CLI as written', async (_where, block) => {
    for (const line of shellLines(block.body)) {
      for (const command of line.split(/\s*&&\s*/)) {
        const argv = words(command);
        // Environment assignments before the program (OLLAMA_HOST=… conclave …).
        while (argv[0] !== undefined && /^[A-Z_]+=/.test(argv[0])) argv.shift();
        const [program, ...rest] = argv;
        if (program === 'conclave') {
          await conclave(rest, `${block.file}:${block.line}: ${command}`);
        } else if (program === 'npx' && (rest[0] === 'conclave' || (rest[0] === 'tsx' && rest[1] === 'src/cli/entry.ts'))) {
          await conclave(rest[0] === 'conclave' ? rest.slice(1) : rest.slice(2), `${block.file}:${block.line}: ${command}`);
        } else if (program === 'npm') {
          const script = rest[0] === 'run' ? rest[1] : rest[0];
          if (script !== 'ci' && script !== 'link') expect(packageJson.scripts[script ?? ''], `${block.file}: npm ${rest.join(' ')}`).toBeDefined();
        } else if (program === 'sqlite3') {
          // Run the documented query against a real record.
          const db = await demoDb();
          const sqlite = new Database(db, { readonly: true });
          expect(() => sqlite.prepare(rest[1] ?? '').all()).not.toThrow();
          sqlite.close();
        } else {
          // Other programs (git, ollama) are the user's own.
          expect(['git', 'cd', 'ollama'], `${block.file}:${block.line}: ${command}`).toContain(program);
        }
      }
    }
    // A demo runs a whole debate; on a busy machine that takes a while.
  }, 180_000);
});

async function demoDb(): Promise<string> {
  const db = join(dir, 'demo.db');
  if (demoId === '') {
    const r = await cli(['demo', '--db', db, '--json', '--quiet']);
    expect(r.code).toBe(0);
    demoId = (JSON.parse(r.stdout) as { id: string }).id;
  }
  return db;
}

/**
 * Runs a documented conclave command when it needs nothing but the simulator and a
 * stored debate (demo, list, show, replay, export), with its database in a temp folder;
 * otherwise checks that the CLI accepts it as written.
 */
async function conclave(args: string[], where: string): Promise<void> {
  const usage = await checkCommandLine(args, { stdout: capture(), stderr: capture(), env: {}, cwd: dir });
  expect(usage, where).toBeNull();
  const [command] = args;
  if (!['demo', 'list', 'show', 'replay', 'export'].includes(command ?? '')) return;
  const db = await demoDb();
  const real = args.map((a) => (a === '<id>' || a === 'ID' ? demoId : a));
  const at = real.indexOf('--db');
  if (at >= 0) real.splice(at, 2);
  const r = await cli([...real, '--db', db, ...(command === 'demo' ? ['--quiet'] : [])]);
  // Viewing commands write only to stdout (replay's transcript included).
  expect(r.stderr, where).toBe('');
  expect(r.code, where).toBe(0);
}
