// The first `Intl.NumberFormat` of a process loads ICU's number data: 15 to 25 ms of CPU, as much
// as reading a record. Whole numbers, nearly every number printed, are grouped here instead; any
// other number goes to one shared formatter (`toLocaleString` would build one per call).
let enUS: Intl.NumberFormat | undefined;

/** `1,234`: a number as en-US writes it, the same text as `n.toLocaleString('en-US')`. */
export function formatNumber(n: number): string {
  // -0 is written `-0` by en-US; a safe integer's digits are exact.
  if (Number.isSafeInteger(n) && !Object.is(n, -0)) {
    const digits = String(Math.abs(n));
    let out = digits.length > 3 ? digits.slice(0, digits.length % 3 || 3) : digits;
    for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
    return n < 0 ? `-${out}` : out;
  }
  enUS ??= new Intl.NumberFormat('en-US');
  return enUS.format(n);
}

/** `1 agent`, `3 agents`: a count with its noun in the right number (`many` for irregular plurals). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatNumber(n)} ${n === 1 ? one : many}`;
}

/** `a debate`, `an auto`, `an oxford`: a word after its indefinite article, chosen by its first letter (the names it is given have no silent h or long u). */
export function withArticle(word: string): string {
  return `${/^[aeiou]/i.test(word) ? 'an' : 'a'} ${word}`;
}
