// One statement for many callers: calls made in the same turn of the event loop, or while the
// previous batch's statement runs, are gathered into the next batch. The vendor worker's jobs
// arrive in fetches of up to 50 and start together, so their per-order statements (the pending
// mark) become one round trip and one commit for the fetch instead of one each
// (docs/performance.md, "Orders").
//
// One batch runs at a time per coalescer: under load the batches grow rather than the number of
// statements in flight. A failed batch rejects every caller in it (each job is then retried).
import type { Db } from './pool.ts';

export function coalesce<I, O>(run: (inputs: I[]) => Promise<O[]>, max: number): (input: I) => Promise<O> {
  const queue: { input: I; resolve: (o: O) => void; reject: (err: unknown) => void }[] = [];
  let running = false;
  const flush = async () => {
    while (queue.length) {
      const batch = queue.splice(0, max);
      try {
        const outputs = await run(batch.map((b) => b.input));
        batch.forEach((b, i) => b.resolve(outputs[i]));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    running = false;
  };
  return (input) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      if (!running) {
        running = true;
        setImmediate(() => void flush());
      }
    });
}

/** A coalescer per pool (a process has one; tests have several): `perPool(run, max)(db)(input)`. */
export function perPool<I, O>(run: (db: Db, inputs: I[]) => Promise<O[]>, max: number): (db: Db) => (input: I) => Promise<O> {
  const byPool = new WeakMap<Db, (input: I) => Promise<O>>();
  return (db) => {
    let call = byPool.get(db);
    if (!call) byPool.set(db, (call = coalesce((inputs: I[]) => run(db, inputs), max)));
    return call;
  };
}
