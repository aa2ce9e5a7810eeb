// npm run openapi: writes the generated OpenAPI document (api/openapi/document.ts) to
// docs/openapi.json, byte for byte what GET /openapi.json serves. test/api/openapi.test.ts
// fails while the committed file differs from the generated one.
import { writeFile } from 'node:fs/promises';
import { openApiText } from '../api/openapi/document.ts';
import { ROOT } from './lib/local.ts';

const target = `${ROOT}docs/openapi.json`;
await writeFile(target, openApiText());
console.log(`wrote ${target}`);
