// Every statement's row schema is a module constant (db/row-shapes.ts says why): zod compiles an
// object schema's parser on its first parse, so a schema written inline in `sql.type(...)` would
// be built and compiled again on every call. This reads the sources of everything that runs
// statements and names each `sql.type(...)` whose argument is not a plain name.
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';

const root = new URL('../../', import.meta.url);
const folders = ['api', 'db', 'gateways', 'workers'];

function sources(dir: URL): URL[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(new URL(`${e.name}/`, dir)) : e.name.endsWith('.ts') ? [new URL(e.name, dir)] : []);
}

/** The argument of each `sql.type(` in `text`, its parentheses balanced. */
function typeArguments(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/sql\.type\(/g)) {
    let depth = 1;
    let i = m.index + m[0].length;
    const start = i;
    while (depth > 0 && i < text.length) {
      if (text[i] === '(') depth++;
      else if (text[i] === ')') depth--;
      i++;
    }
    found.push(text.slice(start, i - 1));
  }
  return found;
}

t.test('the scan finds an inline schema', async (t) => {
  t.same(typeArguments('db.one(sql.type(z.object({ id: z.string() }))`select 1`)'), ['z.object({ id: z.string() })']);
  t.same(typeArguments('db.one(sql.type(orderRow)`select 1`)'), ['orderRow']);
});

t.test('no statement builds its row schema per call', async (t) => {
  const inline: string[] = [];
  let checked = 0;
  for (const folder of folders) {
    for (const file of sources(new URL(`${folder}/`, root))) {
      for (const arg of typeArguments(readFileSync(file, 'utf8'))) {
        checked++;
        if (!/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(arg.trim())) inline.push(`${file.pathname.slice(root.pathname.length)}: ${arg}`);
      }
    }
  }
  t.ok(checked > 100, `read ${checked} sql.type calls`);
  t.same(inline, [], 'row schemas passed to sql.type are module constants');
});
