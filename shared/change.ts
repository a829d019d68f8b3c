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
  // Both sides built in one pass, with no closure per call (this runs for every edit replayed).
  let fwd = "";
  let rev = "";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    const e = files.get(k) as { minus: string[]; plus: string[] };
    const minus = e.minus.join("\n");
    const plus = e.plus.join("\n");
    const sep = i === 0 ? "" : "\u0001";
    fwd += `${sep}${k}\u0000-${minus}\u0000+${plus}`;
    rev += `${sep}${k}\u0000-${plus}\u0000+${minus}`;
  }
  return { fwd: sha256(fwd), rev: sha256(rev) };
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
