// The simulator's switches (admin routes, unsigned operator calls) answer only callers on the
// same machine: tests and the operator's own shell, never the network.
import type { RequestHandler } from 'express';

export const isLoopback = (address: string | undefined) =>
  address !== undefined && (address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.'));

/** Refuses (403) any caller not on this machine; `what` names the routes in the refusal. */
export const loopbackOnly =
  (what: string): RequestHandler =>
  (req, res, next) => {
    if (!isLoopback(req.socket.remoteAddress)) return void res.status(403).json({ error: { code: 'FORBIDDEN', message: `${what} is loopback only` } });
    next();
  };
