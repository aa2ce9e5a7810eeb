// A team user as the API shows it (DESIGN.md 6): no keys, no removal history.
import type { UserRow } from '../users.ts';
import { iso } from './time.ts';

export function presentUser(u: UserRow) {
  return {
    id: u.id,
    full_name: u.full_name,
    email: u.email,
    phone_number: u.phone_number,
    role: u.role,
    created_at: iso(u.created_at),
  };
}
