// `toLocaleString` builds a new formatter on every call (tens of µs); one shared formatter writes the same text.
let enUS: Intl.NumberFormat | undefined;

/** `1,234`: a number as en-US writes it, the same text as `n.toLocaleString('en-US')`. */
export function formatNumber(n: number): string {
  enUS ??= new Intl.NumberFormat('en-US');
  return enUS.format(n);
}

/** `1 agent`, `3 agents`: a count with its noun in the right number (`many` for irregular plurals). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatNumber(n)} ${n === 1 ? one : many}`;
}
