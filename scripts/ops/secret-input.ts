// Secrets handed to the ops CLI. A value on the command line is visible to every local user
// in `ps` and stays in shell history, so every flag that takes a secret (--X) also takes
// --X-file PATH, where PATH "-" is stdin. The file's content stands in for --X before the
// command's own schema sees the input, so each command validates one shape either way.
// One trailing newline is dropped: `echo "$S" > f` and a here-string both add one.
import { readFile } from 'node:fs/promises';

export const FILE_SUFFIX = '-file';

export class SecretInputError extends Error {}

/** The --X-file flag of each secret flag, for node:util parseArgs. */
export function secretFileFlags(names: readonly string[]): Record<string, { type: 'string' }> {
  return Object.fromEntries(names.map((name) => [`${name}${FILE_SUFFIX}`, { type: 'string' as const }]));
}

/** One usage line naming the file forms of a command's secret flags. */
export function secretFileUsage(names: readonly string[]): string {
  return `secrets also from a file: ${names.map((n) => `--${n}${FILE_SUFFIX} PATH`).join(', ')} ('-' = stdin)`;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Replaces each --X-file in parsed flags by --X read from that file (or stdin). */
export async function readSecretFiles(values: Record<string, unknown>, names: readonly string[]): Promise<void> {
  const fromStdin = names.filter((name) => values[`${name}${FILE_SUFFIX}`] === '-');
  if (fromStdin.length > 1) throw new SecretInputError(`only one secret can come from stdin (${fromStdin.map((n) => `--${n}${FILE_SUFFIX}`).join(', ')})`);
  for (const name of names) {
    const fileFlag = `${name}${FILE_SUFFIX}`;
    const path = values[fileFlag];
    if (path === undefined) continue;
    delete values[fileFlag];
    if (values[name] !== undefined) throw new SecretInputError(`give --${name} or --${fileFlag}, not both`);
    let text: string;
    try {
      text = path === '-' ? await readStdin() : await readFile(String(path), 'utf8');
    } catch (err) {
      throw new SecretInputError(`--${fileFlag}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const secret = text.replace(/\r?\n$/, '');
    if (secret === '') throw new SecretInputError(`--${fileFlag}: ${path === '-' ? 'stdin' : path} is empty`);
    values[name] = secret;
  }
}
