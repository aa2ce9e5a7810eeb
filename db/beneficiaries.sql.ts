// One function per statement on the beneficiary aggregate (table beneficiaries).
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { idRow } from './row-shapes.ts';

/** NAME_MISMATCH: the account exists, but the bank names another holder than the one saved (verified_name is the bank's). */
export const verificationStatus = z.enum(['PENDING', 'VERIFIED', 'NAME_MISMATCH', 'FAILED']);

export const beneficiaryRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  label: z.string(),
  channel: z.enum(['BANK', 'EWALLET']),
  bank_id: z.string().nullable(),
  /** The bank's short code, read with the row (banks are never deleted, only disabled). */
  bank_short_code: z.string().nullable(),
  account_number: z.string().nullable(),
  account_name: z.string().nullable(),
  ewallet_provider: z.string().nullable(),
  ewallet_phone: z.string().nullable(),
  verification_status: verificationStatus,
  verified_name: z.string().nullable(),
  verification_failure: z.string().nullable(),
  is_default: z.boolean(),
  is_enabled: z.boolean(),
  deleted_at: z.date().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
});
export type BeneficiaryRow = z.infer<typeof beneficiaryRow>;

const columns = sql.fragment`
  id, merchant_id, label, channel, bank_id,
  (select b.short_code from banks b where b.id = beneficiaries.bank_id) as bank_short_code, account_number, account_name, ewallet_provider, ewallet_phone,
  verification_status, verified_name, verification_failure, is_default, is_enabled, deleted_at, created_at, updated_at`;

export interface NewBeneficiary {
  id: string;
  merchantId: string;
  label: string;
  channel: 'BANK' | 'EWALLET';
  bankId: string | null;
  accountNumber: string | null;
  accountName: string | null;
  ewalletProvider: string | null;
  ewalletPhone: string | null;
  isDefault: boolean;
}

/**
 * Serialises default changes of one merchant. `no key update` rather than `update`: it does not
 * conflict with the key-share locks that inserting the merchant's orders and disbursements take
 * on this row, so their traffic never waits for a beneficiary.
 */
export function lockMerchantDefaults(db: Db, merchantId: string) {
  return db.oneFirst(sql.type(idRow)`
    select id from merchants where id = ${merchantId} for no key update`);
}

export function unsetDefault(db: Db, merchantId: string) {
  return db.query(sql.unsafe`
    update beneficiaries set is_default = false, updated_at = now()
    where merchant_id = ${merchantId} and is_default and deleted_at is null`);
}

export function insertBeneficiary(db: Db, b: NewBeneficiary) {
  return db.one(sql.type(beneficiaryRow)`
    insert into beneficiaries (id, merchant_id, label, channel, bank_id, account_number, account_name,
                               ewallet_provider, ewallet_phone, is_default)
    values (${b.id}, ${b.merchantId}, ${b.label}, ${b.channel}, ${b.bankId}, ${b.accountNumber}, ${b.accountName},
            ${b.ewalletProvider}, ${b.ewalletPhone}, ${b.isDefault})
    returning ${columns}`);
}

/** The merchant's live beneficiaries: the default first, then newest first. */
export function listMerchantBeneficiaries(db: Db, merchantId: string) {
  return db.any(sql.type(beneficiaryRow)`
    select ${columns} from beneficiaries
    where merchant_id = ${merchantId} and deleted_at is null
    order by is_default desc, created_at desc, id desc`);
}

/** A live beneficiary of the merchant; deleted and other merchants' ones are null alike. */
export function findMerchantBeneficiary(db: Db, merchantId: string, id: string) {
  return db.maybeOne(sql.type(beneficiaryRow)`
    select ${columns} from beneficiaries where id = ${id} and merchant_id = ${merchantId} and deleted_at is null`);
}

/**
 * A live beneficiary of the merchant, locked: a repeated verify request waits here for the
 * first one's commit, then sees its PENDING and queues nothing.
 */
export function lockMerchantBeneficiary(db: Db, merchantId: string, id: string) {
  return db.maybeOne(sql.type(beneficiaryRow)`
    select ${columns} from beneficiaries where id = ${id} and merchant_id = ${merchantId} and deleted_at is null
    for update`);
}

/** Starts a new check: back to PENDING, the previous result and failures cleared, the deadline restarted. */
export function restartVerification(db: Db, id: string) {
  return db.one(sql.type(beneficiaryRow)`
    update beneficiaries
    set verification_status = 'PENDING', verified_name = null, verification_failure = null,
        verification_last_error = null, verification_requested_at = now(), updated_at = now()
    where id = ${id}
    returning ${columns}`);
}

/** Any beneficiary, deleted or not (the verification job). */
export function findBeneficiary(db: Db, id: string) {
  return db.maybeOne(sql.type(beneficiaryRow)`select ${columns} from beneficiaries where id = ${id}`);
}

/** Soft delete, which also gives up the default; null when there was no live row to delete. */
export function softDeleteBeneficiary(db: Db, merchantId: string, id: string) {
  return db.maybeOneFirst(sql.type(idRow)`
    update beneficiaries set deleted_at = now(), is_default = false, updated_at = now()
    where id = ${id} and merchant_id = ${merchantId} and deleted_at is null
    returning id`);
}

export type Verification =
  | { status: 'VERIFIED'; verifiedName: string }
  | { status: 'NAME_MISMATCH'; verifiedName: string; reason: string }
  | { status: 'FAILED'; reason: string };

/**
 * Keeps why an attempt got no answer on a PENDING row (not shown, and not a change the merchant
 * sees, so updated_at stays): whatever fails the check later records it as the reason.
 */
export function recordAttemptFailure(db: Db, id: string, problem: string) {
  return db.query(sql.unsafe`
    update beneficiaries set verification_last_error = ${problem}
    where id = ${id} and verification_status = 'PENDING'`);
}

/**
 * Fails up to `limit` checks started more than `olderThanSeconds` ago and still PENDING, with
 * the last attempt's reason (or `fallback` when no attempt ran); returns their ids. SKIP LOCKED:
 * a row a job is writing right now is left to it, and two schedulers share the work.
 */
export function failOverdueVerifications(db: Db, olderThanSeconds: number, limit: number, fallback: string) {
  return db.anyFirst(sql.type(idRow)`
    with overdue as (
      select id from beneficiaries
      where verification_status = 'PENDING' and verification_requested_at < now() - make_interval(secs => ${olderThanSeconds})
      order by verification_requested_at
      limit ${limit}
      for update skip locked
    )
    update beneficiaries b
    set verification_status = 'FAILED', verification_failure = coalesce(b.verification_last_error, ${fallback}), updated_at = now()
    from overdue where b.id = overdue.id
    returning b.id`);
}

/**
 * Records a verification result on a PENDING beneficiary, in one statement so that a duplicate
 * or late job changes nothing: null when it was no longer PENDING.
 */
export function recordVerification(db: Db, id: string, result: Verification) {
  return db.maybeOne(sql.type(beneficiaryRow)`
    update beneficiaries
    set verification_status = ${result.status},
        verified_name = ${result.status === 'FAILED' ? null : result.verifiedName},
        verification_failure = ${result.status === 'VERIFIED' ? null : result.reason},
        updated_at = now()
    where id = ${id} and verification_status = 'PENDING'
    returning ${columns}`);
}
