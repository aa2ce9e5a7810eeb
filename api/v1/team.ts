// Team management (spec 4.9): the merchant's users and their roles. Only an owner reaches these
// routes (api/http/roles.ts). Users hold no credentials of their own here: an operator issues
// a team user's API key (`user:issue-key`), as the platform provisions the merchant's.
import { Router } from 'express';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { ApiError } from '../../db/errors.ts';
import { changeRole, createUser, listUsers, removeUser, role } from '../../db/users.ts';
import { sendData, sendStored } from '../http/envelope.ts';
import { normalizePhone, phoneField } from '../http/phone.ts';
import { emailAddress, idempotentRequest, parseBody } from '../http/validate.ts';
import { idempotent } from '../../db/idempotency.ts';
import { toJson } from '../../db/present/json-text.ts';
import { uuidParam } from '../http/wallet.ts';
import { presentUser } from '../../db/present/users.ts';
import { knownQuery } from '../http/list-filters.ts';

const roleField = z.enum(role.options);

// Messages come from api/http/validate.ts. The e-mail is trimmed, then checked (a check, not a
// pipe, so the document shows its format).
export const createBody = z.strictObject({
  full_name: z.string().trim().min(1).max(200),
  email: z.string().trim().max(254).check(emailAddress()),
  phone_number: phoneField().nullish().transform((v) => v || null),
  role: roleField,
});

export const roleBody = z.strictObject({ role: roleField });

export function teamRoutes(ctx: AppContext): Router {
  const router = Router();

  router.get('/v1/my/users', knownQuery(), async (req, res) => {
    sendData(res, (await listUsers(ctx.pool, req.merchant.id)).map(presentUser));
  });

  router.post('/v1/my/users', async (req, res) => {
    const body = parseBody(createBody, req.body);
    let phone: string | null = null;
    if (body.phone_number) {
      phone = normalizePhone(body.phone_number);
      if (!phone) throw new ApiError('INVALID_BODY', 'phone_number: must be an Indonesian phone number');
    }
    const answer = await idempotent(ctx.pool, idempotentRequest(req, 'team-user'), async (tx) => {
      const user = await createUser(tx, { merchantId: req.merchant.id, fullName: body.full_name, email: body.email, phoneNumber: phone, role: body.role });
      return { status: 201, body: toJson({ success: true, data: presentUser(user) }) };
    });
    sendStored(res, answer.status, answer.body, answer.replayed);
  });

  router.patch('/v1/my/users/:user_id/role', async (req, res) => {
    const userId = uuidParam(req, 'user_id');
    const body = parseBody(roleBody, req.body);
    sendData(res, presentUser(await changeRole(ctx.pool, req.merchant.id, userId, body.role)));
  });

  // The contract removes a user with DELETE on its role (spec 4.9); the answer is the spec's
  // delete envelope.
  router.delete('/v1/my/users/:user_id/role', async (req, res) => {
    await removeUser(ctx.pool, req.merchant.id, uuidParam(req, 'user_id'));
    sendData(res, { deleted: true });
  });

  return router;
}
