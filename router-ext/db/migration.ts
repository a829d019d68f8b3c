/** One versioned schema step. A migration is never edited once shipped: add a new one. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
