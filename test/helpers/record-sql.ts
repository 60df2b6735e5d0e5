import Database from 'better-sqlite3';

/** A consistent copy of a record (VACUUM INTO), for one attack on it. */
export function copyRecord(source: string, copy: string): string {
  const s = new Database(source);
  try {
    s.prepare('vacuum into ?').run(copy);
  } finally {
    s.close();
  }
  return copy;
}

/** Plain SQL on a record, as someone editing the file by hand would run it. */
export function sql(file: string, ...statements: string[]): void {
  const s = new Database(file);
  try {
    for (const statement of statements) s.prepare(statement).run();
  } finally {
    s.close();
  }
}
