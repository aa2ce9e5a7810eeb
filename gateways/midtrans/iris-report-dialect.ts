// The simulator's Iris statement (GET /iris/api/v1/statements with {from_date, to_date} as a JSON
// body, as both official SDKs send them: midtrans-go iris GetTransactionHistory, the Node
// client's getTransactionHistory), as Iris documents it (TransactionHistoryResponse),
// independently of Kasir's reading (gateways/midtrans/report.ts): one line per movement of the
// account's balance on the WIB dates asked (inclusive). A payout that completed is a "Payout"
// debit at the time it completed; one the bank refused after approval left the balance when it
// was made and came back as a "Refund" credit when it failed, as the docs' sample shows.
// Dates in the query string are not read: without the body the answer is a 400, never another
// window.
import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { readBody } from '../simulator/dialect.ts';
import type { DisbursementRecord } from '../simulator/store.ts';

interface Payout {
  referenceNo: string;
  name: string;
  account: string;
  bank: string;
  amount: number;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const statementBody = z.object({ from_date: z.string().regex(DATE), to_date: z.string().regex(DATE) });
const wibDate = (at: Date) => new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 10);

/** Mounted on the Iris dialect's router (before its 404); `auth` is its creator-or-approver check. */
export function irisStatements(dialect: { payouts: ReadonlyMap<string, Payout>; recordOf(p: Payout): DisbursementRecord | null; auth: RequestHandler }): Router {
  const router = Router();
  router.get('/api/v1/statements', dialect.auth, (req, res) => {
    const body = readBody(statementBody, req);
    if (!body.ok || body.data.from_date > body.data.to_date) {
      return void res.status(400).json({ error_message: 'An error occurred when getting statements', errors: ['from_date and to_date must be dates YYYY-MM-DD in a JSON body, from_date first'] });
    }
    const { from_date: from, to_date: to } = body.data;
    const lines = [];
    const line = (p: Payout, type: 'Payout' | 'Refund', at: Date) => ({
      reference_no: p.referenceNo,
      beneficiary_name: p.name,
      beneficiary_account: p.account.slice(-4),
      account: p.bank,
      type,
      amount: `${p.amount}.00`,
      status: type === 'Payout' ? 'debit' : 'credit',
      created_at: at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    const inDates = (at: Date) => wibDate(at) >= from && wibDate(at) <= to;
    for (const p of dialect.payouts.values()) {
      const record = dialect.recordOf(p);
      if (record?.status === 'SUCCESS' && inDates(record.updatedAt)) lines.push(line(p, 'Payout', record.updatedAt));
      if (record?.status === 'FAILED') {
        if (inDates(record.createdAt)) lines.push(line(p, 'Payout', record.createdAt));
        if (inDates(record.updatedAt)) lines.push(line(p, 'Refund', record.updatedAt));
      }
    }
    res.json(lines.sort((a, b) => a.created_at.localeCompare(b.created_at)));
  });
  return router;
}
