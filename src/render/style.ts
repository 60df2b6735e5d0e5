/**
 * Terminal capabilities, decided once. Colour and live redraws appear only on a TTY;
 * `CI`, `NO_COLOR` and `TERM=dumb` turn both off, leaving plain lines.
 */
export interface TermStyle {
  color: boolean;
  live: boolean;
  columns: number;
}

export function detectStyle(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): TermStyle {
  const tty = stream.isTTY === true;
  const ci = env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0';
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  const dumb = env.TERM === 'dumb';
  const plain = !tty || ci || noColor || dumb;
  return {
    color: !plain && env.FORCE_COLOR !== '0',
    live: !plain,
    columns: stream.columns && stream.columns > 20 ? stream.columns : columnsFromEnv(env) ?? 100,
  };
}

/** `COLUMNS` when it names a usable width: a pipe has no width of its own, and a user who sets it there means it. */
export function columnsFromEnv(env: NodeJS.ProcessEnv): number | null {
  const n = Number(env.COLUMNS);
  return env.COLUMNS !== undefined && env.COLUMNS.trim() !== '' && Number.isInteger(n) && n > 20 ? n : null;
}

export const plainStyle: TermStyle = { color: false, live: false, columns: 100 };

const codes = { bold: [1, 22], dim: [2, 22], red: [31, 39], green: [32, 39], yellow: [33, 39], cyan: [36, 39], magenta: [35, 39] } as const;
export type Paint = (name: keyof typeof codes, text: string) => string;

export function painter(style: TermStyle): Paint {
  return (name, text) => (style.color ? `\u001b[${codes[name][0]}m${text}\u001b[${codes[name][1]}m` : text);
}
