// Row shapes many statements share. A statement's row schema is a module constant, never built
// inside the function that runs it: zod builds an object schema's parser on its first parse, so
// a schema made per call paid its construction and that compilation on every call (a tenth of the
// API's JavaScript per order create before they were hoisted; docs/performance.md).
import { z } from 'zod';

export const idRow = z.object({ id: z.string() });
export const countRow = z.object({ n: z.number() });
export const codeRow = z.object({ code: z.string() });
export const totalRow = z.object({ total: z.number() });
export const merchantIdRow = z.object({ merchant_id: z.string() });
