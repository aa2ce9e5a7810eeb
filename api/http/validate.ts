// Request validation with zod: the first problem becomes 400 INVALID_BODY naming the field.
import type { Request } from 'express';
import { z } from 'zod';
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

/** An Idempotency-Key header's value: printable ASCII, 1-255 characters. */
export const idempotencyKey = z.string().min(1).max(255).regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/** The request's Idempotency-Key, if it sent one; a malformed one is 400 INVALID_BODY. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.get('idempotency-key');
  if (key !== undefined && !idempotencyKey.safeParse(key).success) throw new ApiError('INVALID_BODY', 'Idempotency-Key: must be 1-255 printable characters');
  return key;
}

/** The request's Idempotency-Key as db/idempotency.ts takes it (null without one). */
export function idempotentRequest(req: Request, operation: string) {
  const key = idempotencyKeyOf(req);
  return key === undefined ? null : { merchantId: req.merchant.id, key, operation, rawBody: req.rawBody ?? Buffer.alloc(0) };
}
