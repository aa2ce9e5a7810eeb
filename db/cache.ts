// An in-process cached value, for data that changes rarely and whose writers notify (master
// data). It keeps the loading promise, so concurrent requests share one query, and `clear`
// drops an in-flight load too: a load that began before a change committed may answer the
// requests already waiting on it, never one that arrives after the clear. Failures are not kept.

export interface CachedValue<T> {
  get(): Promise<T>;
  clear(): void;
}

export function cachedValue<T>(ttlMs: number, load: () => Promise<T>): CachedValue<T> {
  let entry: { value: Promise<T>; until: number } | null = null;
  return {
    get() {
      if (entry && entry.until > Date.now()) return entry.value;
      const value = load();
      const mine = { value, until: Date.now() + ttlMs };
      entry = mine;
      value.catch(() => {
        if (entry === mine) entry = null;
      });
      return value;
    },
    clear() {
      entry = null;
    },
  };
}
