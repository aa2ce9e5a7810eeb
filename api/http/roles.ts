// What each role may do (DESIGN.md 6), decided in one place for every authenticated /v1
// request, after authentication and before any router: a request's method and path name a
// permission, and the key's role either holds it or the request is 403 FORBIDDEN.
//
// - owner: everything (the merchant's own key is owner).
// - finance: money: disbursements (and their CSV import), settlements, reports and exports.
// - ops: orders (create, fetch-status), refunds, beneficiaries.
// - viewer: read only.
// Every role reads everything except the team, whose members' emails and phones are the
// owner's to see and manage. A write to a path no rule names is the owner's alone, so an
// endpoint added later stays closed to team keys until it is given a family here.
//
// Paths are matched as Express matches routes (case-insensitive, optional trailing slash,
// undecoded), so no spelling of a path reaches a router past a rule meant for it.
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../../db/errors.ts';
import type { Role } from '../../db/users.sql.ts';

export type Permission = 'read' | 'team' | 'orders' | 'refunds' | 'beneficiaries' | 'money' | 'reports' | 'owner';

const grants: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set<Permission>(['read', 'team', 'orders', 'refunds', 'beneficiaries', 'money', 'reports', 'owner']),
  finance: new Set<Permission>(['read', 'money', 'reports']),
  ops: new Set<Permission>(['read', 'orders', 'refunds', 'beneficiaries']),
  viewer: new Set<Permission>(['read']),
};

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

// Paths relative to the /v1 mount. The first rule that matches decides; order matters.
const rules: { writes: boolean; reads: boolean; path: RegExp; permission: Permission }[] = [
  { reads: true, writes: true, path: /^\/my\/users(?:\/.*)?$/i, permission: 'team' },
  { reads: false, writes: true, path: /^\/orders\/[^/]+\/refunds?\/?$/i, permission: 'refunds' },
  { reads: false, writes: true, path: /^\/orders(?:\/.*)?$/i, permission: 'orders' },
  { reads: false, writes: true, path: /^\/(?:disbursements|settlements|balance|balance-history)(?:\/.*)?$/i, permission: 'money' },
  { reads: false, writes: true, path: /^\/reports(?:\/.*)?$/i, permission: 'reports' },
  { reads: false, writes: true, path: /^\/beneficiaries(?:\/.*)?$/i, permission: 'beneficiaries' },
];

/** The permission a request needs; `path` is relative to /v1. */
export function permissionFor(method: string, path: string): Permission {
  const safe = SAFE_METHODS.has(method.toUpperCase());
  const rule = rules.find((r) => (safe ? r.reads : r.writes) && r.path.test(path));
  if (rule) return rule.permission;
  return safe ? 'read' : 'owner';
}

export function mayDo(role: Role, permission: Permission): boolean {
  return grants[role].has(permission);
}

/** Mounted on /v1 after requireApiKey. */
export function authorizeRole(req: Request, _res: Response, next: NextFunction): void {
  if (!mayDo(req.role, permissionFor(req.method, req.path))) {
    throw new ApiError('FORBIDDEN', `Your role (${req.role}) does not allow this operation`);
  }
  next();
}
