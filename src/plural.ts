/** `1 agent`, `3 agents`: a count with its noun in the right number (`many` for irregular plurals). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}
