// The reader's two row decisions against SQLite itself: unreadPart() against
// the SQL filter the reader ran before (kept here as the reference), and
// inIdOrder() against ORDER BY id, on rows built to catch each rule.
import Database from "better-sqlite3";
import { afterAll, describe, expect, test } from "vitest";
import { prng } from "../../bench/core-opencode-db.ts";
import { compareIds, inIdOrder, UNREAD_PART_TYPES, unreadPart } from "./part-rows.ts";

/** The reader's SQL filter before part-rows.ts (over the same types): true where SQLite left the row unread. */
const UNREAD_TYPES = [...UNREAD_PART_TYPES];
const TYPE_AT = `instr(data, '"type":"')`;
const UNREAD_SQL = [
  `${TYPE_AT} > 0`,
  `instr('sprfa', substr(data, ${TYPE_AT} + 8, 1)) > 0`,
  `(${UNREAD_TYPES.map((t) => `substr(data, ${TYPE_AT} + 8, ${t.length + 1}) = '${t}"'`).join(" OR ")})`,
  `instr(substr(data, ${TYPE_AT} + 6), '"type"') = 0`,
  `instr(data, '\\u') = 0`,
].join(" AND ");

const db = new Database(":memory:");
afterAll(() => db.close());
db.exec("CREATE TABLE part (id TEXT, data)");
const sqlUnread = db.prepare(`SELECT coalesce((${UNREAD_SQL}), 0) AS u FROM (SELECT ? AS data)`).pluck();

const ROWS: unknown[] = [
  '{"snapshot":"abc","type":"step-start"}',
  '{"type":"step-finish","reason":"tool-calls","tokens":{"input":1}}',
  '{"type":"reasoning","text":"thinking"}',
  '{"type":"patch","hash":"h","files":["a.ts"]}',
  '{"type":"file","url":"data:x"}',
  '{"type":"agent","name":"a"}',
  '{"type":"subtask"}',
  '{"type":"retry"}',
  '{"type":"snapshot","snapshot":"s"}',
  // Read: the adapter's types, a second "type" key, an escape, a type that only starts like one.
  '{"type":"tool","tool":"read","state":{"status":"completed"}}',
  '{"type":"text","text":"hi"}',
  '{"type":"compaction","auto":true}',
  '{"snapshot":"s","type":"step-start","x":{"type":"text"}}',
  '{"x":{"type":"text"},"type":"step-start"}',
  '{"snapshot":"s\\u0041","type":"step-start"}',
  '{"type":"step-started"}',
  '{"type":"step"}',
  '{"type":"files"}',
  '{"type":"patc"}',
  '{"type":"patch',
  '{"type":"',
  '{"type" : "patch"}',
  '{"Type":"patch"}',
  '{"type":"tool","state":{"input":{"type":"patch"}}}',
  '{"state":{"input":{"type":"patch"}}}',
  '{"tool":"read"}',
  "{oops",
  "",
  '"type":"patch"',
  '{"type":"patch","note":"caf\u00e9 \u{1f600}"}',
  '{"note":"\u{1f600}","type":"agent"}',
  Buffer.from('{"type":"patch"}'),
  Buffer.from('{"type":"tool"}'),
  Buffer.from([
    0x7b, 0xff, 0x22, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x22, 0x66, 0x69, 0x6c, 0x65, 0x22, 0x7d,
  ]),
  42,
  1.5,
];

describe("unreadPart", () => {
  test.each(ROWS.map((r, i) => [i, r]))("row %i: the same answer as the reader's SQL filter", (_i, row) => {
    expect(unreadPart(row)).toBe(sqlUnread.get(row) === 1);
  });

  test("leaves the step markers unread and reads what the adapter reads", () => {
    expect(unreadPart('{"snapshot":"abc","type":"step-start"}')).toBe(true);
    expect(unreadPart('{"type":"tool","tool":"read"}')).toBe(false);
    expect(unreadPart('{"type":"text","text":"x"}')).toBe(false);
    // A null data value is read (and counted malformed) rather than dropped unseen.
    expect(unreadPart(null)).toBe(false);
  });
});

describe("inIdOrder", () => {
  const pairsOf = (ids: string[]) => ids.flatMap((id, i) => [id, `data${i}`]);

  test("rows already in order are returned as they are, without a copy", () => {
    const pairs = pairsOf(["prt_1", "prt_2", "prt_3"]);
    expect(inIdOrder(pairs)).toBe(pairs);
  });

  test("rows out of order come back in id order, each id with its data, equal ids in their order", () => {
    const pairs = ["prt_3", "c", "prt_1", "a", "prt_2", "b1", "prt_2", "b2"];
    expect(inIdOrder(pairs)).toEqual(["prt_1", "a", "prt_2", "b1", "prt_2", "b2", "prt_3", "c"]);
  });

  test("the order of SQLite's ORDER BY id on random ids, astral and private-use characters included", () => {
    const rand = prng(7);
    const alphabet = [
      "a",
      "b",
      "Z",
      "0",
      "_",
      "\u00e9",
      "\ue000",
      "\uffff",
      "\u{1f600}",
      "\u{10000}",
      "\ud7ff",
    ];
    const ids = Array.from({ length: 400 }, () =>
      Array.from(
        { length: 1 + Math.floor(rand() * 4) },
        () => alphabet[Math.floor(rand() * alphabet.length)],
      ).join(""),
    );
    db.exec("DELETE FROM part");
    const insert = db.prepare("INSERT INTO part (id, data) VALUES (?, ?)");
    for (const [i, id] of ids.entries()) insert.run(id, `d${i}`);
    const fromSql = db.prepare("SELECT id FROM part ORDER BY id").pluck().all() as string[];
    const sorted = inIdOrder(pairsOf(ids)).filter((_, i) => i % 2 === 0);
    expect(sorted).toEqual(fromSql);
    // JavaScript's own order differs on these: the comparison is what makes them agree.
    expect([...ids].sort()).not.toEqual(fromSql);
    expect(compareIds("\u{1f600}", "\uffff")).toBeGreaterThan(0);
  });
});
