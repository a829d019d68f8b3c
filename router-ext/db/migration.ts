/** One versioned schema step. A migration is never edited once shipped: add a new one. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** `ALTER TABLE <table> ADD COLUMN <name> <type>;`, one line per column, in the order given. */
export function addColumns(table: string, columns: Record<string, string>): string {
  return Object.entries(columns)
    .map(([name, type]) => `ALTER TABLE ${table} ADD COLUMN ${name} ${type};\n`)
    .join("");
}
