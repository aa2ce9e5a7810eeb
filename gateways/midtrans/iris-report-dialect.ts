// The simulator's Iris statement (GET /iris/api/v1/statements?from_date=&to_date=), as Iris
// documents it and its SDKs read it (midtrans-go iris: GetTransactionHistory and
// TransactionHistoryResponse), independently of Kasir's reading (gateways/midtrans/report.ts):
// one line per movement of the account's balance on the WIB dates asked (inclusive), a payout
// that completed as a "Payout" debit at the time it completed. Payouts that failed moved nothing.
import { Router, type RequestHandler } from 'express';
import type { DisbursementRecord } from '../simulator/store.ts';

interface Payout {
  referenceNo: string;
  name: string;
  account: string;
  bank: string;
  amount: number;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const wibDate = (at: Date) => new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 10);

/** Mounted on the Iris dialect's router (before its 404); `auth` is its creator-or-approver check. */
export function irisStatements(dialect: { payouts: ReadonlyMap<string, Payout>; recordOf(p: Payout): DisbursementRecord | null; auth: RequestHandler }): Router {
  const router = Router();
  router.get('/api/v1/statements', dialect.auth, (req, res) => {
    const from = typeof req.query.from_date === 'string' ? req.query.from_date : '';
    const to = typeof req.query.to_date === 'string' ? req.query.to_date : '';
    if (!DATE.test(from) || !DATE.test(to) || from > to) {
      return void res.status(400).json({ error_message: 'An error occurred when getting statements', errors: ['from_date and to_date must be dates YYYY-MM-DD, from_date first'] });
    }
    const lines = [];
    for (const p of dialect.payouts.values()) {
      const record = dialect.recordOf(p);
      if (record?.status !== 'SUCCESS' || wibDate(record.updatedAt) < from || wibDate(record.updatedAt) > to) continue;
      lines.push({
        reference_no: p.referenceNo,
        beneficiary_name: p.name,
        beneficiary_account: p.account.slice(-4),
        account: p.bank,
        type: 'Payout',
        amount: `${p.amount}.00`,
        status: 'debit',
        created_at: record.updatedAt.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      });
    }
    res.json(lines.sort((a, b) => a.created_at.localeCompare(b.created_at)));
  });
  return router;
}
