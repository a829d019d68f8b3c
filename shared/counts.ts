// Counting maps for the tracker's window: add to a key (a count that reaches
// zero goes), and the key with the highest count.

/** Adds `by` to a key's count; a count at or below zero removes the key. */
export function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

/** The key with the highest count (the first one seen on a tie), or null for an empty map. */
export function maxEntry(map: Map<string, number>): [string, number] | null {
  // forEach, not for-of: no [key, value] array per entry on this per-event path.
  let bestKey: string | null = null;
  let bestValue = 0;
  map.forEach((v, k) => {
    if (bestKey === null || v > bestValue) {
      bestKey = k;
      bestValue = v;
    }
  });
  return bestKey === null ? null : [bestKey, bestValue];
}
