import type { CommandModule } from 'yargs';
import { exportCommand } from './commands/export.js';
import { listCommand } from './commands/list.js';
import { showCommand } from './commands/show.js';
import { verifyCommand } from './commands/verify.js';
import { type CliIO, ExitCode } from './io.js';
import { report } from './report.js';

/**
 * The everyday reading commands, run without loading yargs when their command line is plain:
 * flags each command declares (read from its own yargs builder, so the two cannot drift),
 * values of the declared types and choices, and its positionals. Anything else (help, an
 * unknown or malformed flag, a missing argument) returns null, and yargs parses the line,
 * with its messages.
 */
const FAST: Record<string, (io: CliIO, exit: ExitCode) => CommandModule<object, never>> = {
  list: listCommand as never,
  show: showCommand as never,
  export: exportCommand as never,
  verify: verifyCommand as never,
};

interface OptionSpec {
  type?: 'string' | 'boolean' | 'number';
  alias?: string;
  choices?: readonly (string | number)[];
  default?: unknown;
  demandOption?: boolean;
  array?: boolean;
}

/** Runs a plain command line of an everyday command and resolves to its exit code, or to null to leave it to yargs. */
export async function fastPath(argv: readonly string[], io: CliIO): Promise<number | null> {
  const exit = new ExitCode();
  const plain = fastArgs(argv, io, exit);
  if (!plain) return null;
  try {
    await (plain.command.handler as (a: Record<string, unknown>) => Promise<void>)(plain.args);
    return exit.value;
  } catch (err) {
    return report(err, io, plain.args.debug === true);
  }
}

/** The command and the arguments its handler gets, as yargs would give them, or null when the line is not plain. */
export function fastArgs(argv: readonly string[], io: CliIO, exit = new ExitCode()): { command: CommandModule<object, never>; args: Record<string, unknown> } | null {
  const make = FAST[argv[0] ?? ''];
  if (!make) return null;
  const command = make(io, exit);
  const declared = declaredOptions(command);
  if (!declared) return null;
  const args = parse(argv.slice(1), declared, positionalsOf(String(command.command)));
  return args ? { command, args: { ...args, _: [argv[0]], $0: 'conclave' } } : null;
}

/** The options and positionals a command's builder declares, or null when it uses anything more. */
export function declaredOptions(command: CommandModule<object, never>): { options: Map<string, OptionSpec>; positionals: Map<string, OptionSpec> } | null {
  const options = new Map<string, OptionSpec>([['debug', { type: 'boolean' }]]);
  const positionals = new Map<string, OptionSpec>();
  let plain = true;
  const recorder: Record<string, unknown> = new Proxy(
    {},
    {
      get: (_target, method) => {
        if (method === 'option') return (name: string, spec: OptionSpec) => (options.set(name, spec), recorder);
        if (method === 'positional') return (name: string, spec: OptionSpec) => (positionals.set(name, spec), recorder);
        return () => {
          plain = false;
          return recorder;
        };
      },
    },
  );
  if (typeof command.builder !== 'function') return null;
  (command.builder as (y: unknown) => unknown)(recorder);
  return plain ? { options, positionals } : null;
}

/** `show <id>` → ['id'], `verify [id]` → ['id']. */
function positionalsOf(command: string): string[] {
  return [...command.matchAll(/[<[]([\w-]+)[>\]]/g)].map((m) => m[1]!);
}

function parse(tokens: readonly string[], declared: NonNullable<ReturnType<typeof declaredOptions>>, names: string[]): Record<string, unknown> | null {
  const args: Record<string, unknown> = {};
  const byFlag = new Map<string, [string, OptionSpec]>();
  for (const [name, spec] of declared.options) {
    if (spec.array) return null;
    byFlag.set(`--${name}`, [name, spec]);
    if (spec.alias) byFlag.set(spec.alias.length === 1 ? `-${spec.alias}` : `--${spec.alias}`, [name, spec]);
  }
  const positional: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!token.startsWith('-') || token === '-') {
      positional.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const flag = eq > 0 ? token.slice(0, eq) : token;
    const found = byFlag.get(flag);
    if (!found) return null;
    const [name, spec] = found;
    if (name in args) return null;
    if (spec.type === 'boolean') {
      if (eq > 0) return null;
      args[name] = true;
      continue;
    }
    const raw = eq > 0 ? token.slice(eq + 1) : tokens[++i];
    if (raw === undefined || (eq < 0 && raw.startsWith('-'))) return null;
    const value = spec.type === 'number' ? Number(raw) : raw;
    if (spec.type === 'number' && (raw.trim() === '' || !Number.isFinite(value))) return null;
    if (spec.choices && !spec.choices.includes(value as string)) return null;
    args[name] = value;
  }
  if (positional.length > names.length) return null;
  for (const [i, name] of names.entries()) {
    const value = positional[i];
    if (value === undefined) {
      if (declared.positionals.get(name)?.demandOption) return null;
      continue;
    }
    args[name] = value;
  }
  for (const [name, spec] of declared.options) if (!(name in args) && spec.default !== undefined) args[name] = spec.default;
  // yargs hands every option under its alias and in camel case too.
  for (const [name, spec] of declared.options) {
    if (!(name in args)) continue;
    if (spec.alias) args[spec.alias] = args[name];
    const camel = name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
    if (camel !== name) args[camel] = args[name];
  }
  return args;
}
