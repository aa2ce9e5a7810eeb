-- An order paid while its create was unconfirmed (CREATING) or given up (FAILED) now records the
-- vendor whose word paid it as its vendor (db/orders.ts applyPayment). Orders paid that way
-- before kept vendor_code null, so their refunds failed (no vendor payment) and their vendor's
-- reconciliation did not count them: the vendor is the one named by the order.paid event's
-- source (callback:<code> or reconcile:<code>), which only the vendor holding the order could be.
update orders o
set vendor_code = substring(e.source from '^(?:callback|reconcile):(.+)$'), updated_at = now()
from order_events e
where o.vendor_code is null
  and o.status in ('PAID', 'REFUNDED')
  and e.order_id = o.id
  and e.event = 'order.paid'
  and e.source ~ '^(callback|reconcile):.+$'
  and exists (select 1 from vendors v where v.code = substring(e.source from '^(?:callback|reconcile):(.+)$'));
