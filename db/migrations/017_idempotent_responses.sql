-- Idempotency-Key for the V1 POSTs other than order creation (which keeps idempotency_keys,
-- tied to its order attempts): the key is claimed in the transaction that does the work and
-- the answer is stored in that same transaction, so a client that lost the answer (a timeout,
-- a web process killed after the commit) gets the very same answer back, never a second
-- refund. `operation` names the endpoint: a key is one request, on one endpoint.
create table idempotent_responses (
  merchant_id uuid not null references merchants (id),
  key text not null constraint idempotent_responses_key_length check (char_length(key) between 1 and 255),
  operation text not null,
  request_hash bytea not null,
  response_status integer not null,
  response_body text not null,
  created_at timestamptz not null default now(),
  constraint idempotent_responses_pkey primary key (merchant_id, key)
);
create index idempotent_responses_created_idx on idempotent_responses (created_at);
