/**
 * Sets a key in a Map used as an LRU: the key moves to the end, and the oldest
 * entries go once the map holds more than `cap`. Every per-session map in the
 * plugin goes through this, so memory stays bounded for the process.
 */
export function capSet<K, V>(map: Map<K, V>, key: K, value: V, cap: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > cap) {
    const oldest = map.keys().next();
    if (oldest.done) break;
    map.delete(oldest.value);
  }
}
