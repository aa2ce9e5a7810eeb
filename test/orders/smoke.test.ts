import t from 'tap';
import { call } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t);
const merchant = await makeMerchant(stack.api.ctx);

t.test('create an order', async (t) => {
  const started = Date.now();
  const res = await call(stack.api.url, {
    path: '/v1/orders',
    headers: { 'x-api-key': merchant.api_key },
    body: { merchant_order_id: 'INV-1', amount: 150000, payment_method: 'QRIS', customer_phone: '0812-3456-7890' },
  });
  console.log(Date.now() - started, res.status, res.text);
  t.equal(res.status, 201);
});
