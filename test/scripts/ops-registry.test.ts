// The ops CLI loads a command's module only when that command runs (scripts/ops/registry.ts):
// the registry must hold every command a module exports, each under its own name.
import t from 'tap';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from '../../scripts/ops/registry.ts';

const dir = fileURLToPath(new URL('../../scripts/ops/', import.meta.url));

t.test('every registered name loads the command of that name', async (t) => {
  for (const [name, load] of Object.entries(COMMANDS)) t.equal((await load()).name, name);
});

t.test('every command a module exports is registered', async (t) => {
  const registered = new Set(Object.keys(COMMANDS));
  let seen = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'registry.ts')) {
    const exported = await import(`${dir}${file}`);
    for (const value of Object.values(exported)) {
      const c = value as { name?: unknown; run?: unknown; usage?: unknown };
      if (typeof c?.run !== 'function' || typeof c.name !== 'string' || typeof c.usage !== 'string') continue;
      seen++;
      t.ok(registered.has(c.name), `${c.name} (scripts/ops/${file}) is in the registry`);
    }
  }
  t.equal(seen, registered.size, 'as many commands exported as registered');
});
