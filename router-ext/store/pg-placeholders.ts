// The repositories' placeholders as PostgreSQL numbers them: `?` in order,
// `@name` by first appearance (a repeated name reuses its number), never
// inside a quoted literal, identifier or comment. Pure; the PostgreSQL engine
// (pg-sql.ts) calls it on every statement that has parameters.
import type { SqlParams, SqlValue } from "./sql.ts";
import { mapSqlCode } from "./sql-segments.ts";

export interface PgStatement {
  text: string;
  values: SqlValue[];
}

// `@name` only where a value can start: not after an identifier character (an
// email-like word), and `::` casts and `?|` never reach here as they are not placeholders.
const PLACEHOLDER = /\?|(?<![A-Za-z0-9_@])@([A-Za-z_][A-Za-z0-9_]*)/g;

function isPositional(params: SqlParams): params is readonly SqlValue[] {
  return Array.isArray(params);
}

/**
 * @example
 * toPgStatement("SELECT * FROM t WHERE a = ? AND b = ?", [1, "x"]) // {text: "... a = $1 AND b = $2", values: [1, "x"]}
 * toPgStatement("UPDATE t SET a = @v WHERE k = @k OR j = @k", {v: 1, k: "x"}) // {text: "... a = $1 WHERE k = $2 OR j = $2", values: [1, "x"]}
 */
export function toPgStatement(sql: string, params: SqlParams = []): PgStatement {
  const values: SqlValue[] = [];
  const numbered = new Map<string, number>();
  let positional = 0;
  let named = false;
  const text = mapSqlCode(sql, (code) =>
    code.replace(PLACEHOLDER, (match, name: string | undefined) => {
      if (name === undefined) {
        if (!isPositional(params)) throw new Error("a `?` placeholder needs positional parameters");
        if (positional >= params.length)
          throw new Error(
            `statement has more \`?\` placeholders than the ${params.length} parameter(s) given`,
          );
        values.push(params[positional] as SqlValue);
        positional++;
        return `$${positional}`;
      }
      named = true;
      if (isPositional(params)) throw new Error(`placeholder ${match} needs named parameters`);
      const known = numbered.get(name);
      if (known !== undefined) return `$${known}`;
      if (!Object.hasOwn(params, name)) throw new Error(`no value for the placeholder ${match}`);
      values.push(params[name] as SqlValue);
      numbered.set(name, values.length);
      return `$${values.length}`;
    }),
  );
  if (!named && isPositional(params) && positional !== params.length)
    throw new Error(
      `statement has ${positional} \`?\` placeholder(s) but ${params.length} parameter(s) were given`,
    );
  return { text, values };
}
