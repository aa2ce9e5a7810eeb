// Support commands that act on ids take many in one call: --id repeated, or --stdin (a column
// of ids piped from a query or from another command's --json through jq). A support script then
// pays one command's start for hundreds of ids, and reads one answer saying what was done and
// what was skipped, and why. Given exactly one --id a command answers as it always did.
import { OpsError } from './command.ts';

export const manyIdFlags = { id: { type: 'string', multiple: true }, stdin: { type: 'boolean' } } as const;

/** Ids from standard input: whitespace or comma separated (a column of ids piped from a query). */
export async function idsFromStdin(): Promise<string[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/[\s,]+/).filter(Boolean);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The ids of --id and --stdin, each once, in the order given; a malformed one refuses them all. */
export async function givenIds(input: { id?: string[]; stdin?: boolean }, what: string): Promise<string[]> {
  const ids = [...new Set([...(input.id ?? []), ...(input.stdin ? await idsFromStdin() : [])])];
  if (!ids.length) throw new OpsError('give --id ID (repeatable) or --stdin');
  const bad = ids.find((id) => !UUID.test(id));
  if (bad) throw new OpsError(`${bad} is not a ${what} UUID`);
  return ids;
}

/** Whether the caller gave one id the old way (one --id, no --stdin): it gets the one-id answer. */
export const oneIdGiven = (input: { id?: string[]; stdin?: boolean }) => !input.stdin && input.id?.length === 1;

/**
 * Runs `act` for each id in turn. A refusal (OpsError) skips that id with its reason; anything
 * else stops the run, as a bug or a lost database should.
 */
export async function eachId<T>(ids: string[], act: (id: string) => Promise<T>): Promise<{ done: T[]; skipped: { id: string; reason: string }[] }> {
  const done: T[] = [];
  const skipped: { id: string; reason: string }[] = [];
  for (const id of ids) {
    try {
      done.push(await act(id));
    } catch (err) {
      if (!(err instanceof OpsError)) throw err;
      skipped.push({ id, reason: err.message });
    }
  }
  return { done, skipped };
}
