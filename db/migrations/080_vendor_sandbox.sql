-- ops vendor:add --sandbox. A vendor's sandbox (test keys, sandbox hosts) answers every read
-- Kasir makes with whatever its dashboard simulated: a payment simulated there passes every
-- re-read and credits a wallet with no money received. vendor:add refuses such credentials
-- unless the operator marks the vendor as one, and the mark is kept here so /healthz,
-- vendor:list and the web process's startup log can say the stack holds one.
alter table vendors add column sandbox boolean not null default false;
