// Request validation with zod: the first problem becomes 400 INVALID_BODY naming the field.
import type { z } from 'zod';
import { ApiError } from '../../db/errors.ts';

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError('INVALID_BODY', 'Request body must be a JSON object');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue.path.join('.');
  const message = issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message;
  throw new ApiError('INVALID_BODY', field ? `${field}: ${message}` : message);
}
