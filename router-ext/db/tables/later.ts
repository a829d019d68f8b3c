// The later of a column and a value, in SQL both engines accept (SQLite's
// two-argument MAX is GREATEST on PostgreSQL; a CASE is the same on both).
// `a` and `b` are column names or placeholders written by the repositories,
// never user input.
export function later(a: string, b: string): string {
  return `CASE WHEN ${a} > ${b} THEN ${a} ELSE ${b} END`;
}
