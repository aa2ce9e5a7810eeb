-- An unclear vendor answer never becomes a second payment (gateways/gateway.ts). A refund
-- records when it was first sent, so a retry reads the vendor before it may send again; a
-- refund or payout whose outcome no read at its vendor can settle waits for an operator
-- (unresolved_at, with the reason), counted by kasir_rows_in_state{status="UNRESOLVED"} and
-- settled with ops refunds:settle / refunds:resend / payouts:settle.
alter table refunds
  add column sent_at timestamptz,
  add column unresolved_at timestamptz,
  add column unresolved_reason text constraint refunds_unresolved_reason_length check (char_length(unresolved_reason) <= 500);
-- Refunds the previous code left pending were sent: they are read before anything is sent again.
update refunds set sent_at = created_at where status = 'PENDING';

alter table disbursements
  add column unresolved_at timestamptz,
  add column unresolved_reason text constraint disbursements_unresolved_reason_length check (char_length(unresolved_reason) <= 500);
alter table settlements
  add column unresolved_at timestamptz,
  add column unresolved_reason text constraint settlements_unresolved_reason_length check (char_length(unresolved_reason) <= 500);

-- A vendor whose refund callbacks do not carry Kasir's reference (Xendit's qr.refund) is
-- matched by the id it gave in its first answer.
create index refunds_vendor_refund_idx on refunds (vendor_code, vendor_refund_id) where vendor_refund_id is not null;
