// SQL text cut into code and the parts no rewrite may touch: quoted string
// literals ('it''s'), quoted identifiers ("x"), line and block comments.
// The PostgreSQL engine rewrites placeholders and the DDL translation rewrites
// types only in code segments, so a '?' or 'INTEGER' inside a literal stays.
export interface SqlSegment {
  code: boolean;
  text: string;
}

/** Where the quoted or comment part starting at `i` ends (exclusive). */
function quotedEnd(sql: string, i: number): number {
  const open = sql[i];
  if (open === "-") {
    const nl = sql.indexOf("\n", i);
    return nl < 0 ? sql.length : nl + 1;
  }
  if (open === "/") {
    const close = sql.indexOf("*/", i + 2);
    return close < 0 ? sql.length : close + 2;
  }
  let j = i + 1;
  while (j < sql.length) {
    if (sql[j] === open) {
      // A doubled quote is an escaped quote inside the literal.
      if (sql[j + 1] === open) j += 2;
      else return j + 1;
    } else j++;
  }
  return sql.length;
}

function opensQuoted(sql: string, i: number): boolean {
  const c = sql[i];
  if (c === "'" || c === '"') return true;
  if (c === "-" && sql[i + 1] === "-") return true;
  return c === "/" && sql[i + 1] === "*";
}

/** Splits `sql` into alternating code and quoted/comment segments, in order; joined they give `sql` back. */
export function sqlSegments(sql: string): SqlSegment[] {
  const out: SqlSegment[] = [];
  let start = 0;
  let i = 0;
  while (i < sql.length) {
    if (!opensQuoted(sql, i)) {
      i++;
      continue;
    }
    if (i > start) out.push({ code: true, text: sql.slice(start, i) });
    const end = quotedEnd(sql, i);
    out.push({ code: false, text: sql.slice(i, end) });
    start = end;
    i = end;
  }
  if (start < sql.length) out.push({ code: true, text: sql.slice(start) });
  return out;
}

/** `sql` with `fn` applied to its code segments only. */
export function mapSqlCode(sql: string, fn: (code: string) => string): string {
  return sqlSegments(sql)
    .map((s) => (s.code ? fn(s.text) : s.text))
    .join("");
}
