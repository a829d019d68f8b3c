import { sha256 } from "./hash.ts";

/**
 * Fingerprints of a change and of its reverse, from a unified diff: per file,
 * the removed and the added lines. A later change whose fingerprint equals an
 * earlier one's (or its reverse) repeats or undoes it.
 */
export function diffChange(diff: string): { fwd: string; rev: string } | null {
  const files = new Map<string, { minus: string[]; plus: string[] }>();
  let file = "";
  for (const line of diff.split("\n")) {
    if (line.startsWith("+++ ") || line.startsWith("--- ")) {
      const name = line
        .slice(4)
        .replace(/\t.*$/, "")
        .replace(/^[ab]\//, "");
      if (name !== "/dev/null" && line.startsWith("+++ ")) file = name;
      else if (name !== "/dev/null" && !file) file = name;
      continue;
    }
    if (line.startsWith("Index: ") || line.startsWith("diff --git ")) {
      file = "";
      continue;
    }
    if (line.startsWith("@@")) continue;
    if (line.startsWith("+") || line.startsWith("-")) {
      let entry = files.get(file);
      if (!entry) {
        entry = { minus: [], plus: [] };
        files.set(file, entry);
      }
      (line.startsWith("+") ? entry.plus : entry.minus).push(line.slice(1));
    }
  }
  if (files.size === 0) return null;
  const keys = [...files.keys()].sort();
  const side = (swap: boolean) =>
    sha256(
      keys
        .map((k) => {
          const e = files.get(k) as { minus: string[]; plus: string[] };
          const [a, b] = swap ? [e.plus, e.minus] : [e.minus, e.plus];
          return `${k}\u0000-${a.join("\n")}\u0000+${b.join("\n")}`;
        })
        .join("\u0001"),
    );
  return { fwd: side(false), rev: side(true) };
}

/** The same for an edit given as old and new text (no diff available). */
export function editChange(path: string, oldText: string, newText: string): { fwd: string; rev: string } {
  return {
    fwd: sha256(`${path}\u0000-${oldText}\u0000+${newText}`),
    rev: sha256(`${path}\u0000-${newText}\u0000+${oldText}`),
  };
}

/** The same for a write that turned content `prior` into `next` (both content hashes). */
export function writeChange(path: string, prior: string, next: string): { fwd: string; rev: string } {
  return {
    fwd: sha256(`w\u0000${path}\u0000${prior}\u0000${next}`),
    rev: sha256(`w\u0000${path}\u0000${next}\u0000${prior}`),
  };
}
