/** Edit distance between two short words (insertions, deletions, substitutions, swaps of neighbours). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** The candidate nearest to `word`, when it is near enough to be what was meant (a typo, a missing letter); else null. */
export function closest(word: string, candidates: readonly string[]): string | null {
  const w = word.toLowerCase();
  let best: { name: string; distance: number } | null = null;
  for (const name of candidates) {
    const distance = editDistance(w, name.toLowerCase());
    if (!best || distance < best.distance) best = { name, distance };
  }
  if (!best) return null;
  const allowed = Math.max(1, Math.floor(Math.min(w.length, best.name.length) / 3));
  return best.distance <= allowed ? best.name : null;
}
