import { readFileSync } from 'node:fs';
import t from 'tap';
import { buildDynamicQris, crc16ccittFalse, parseQris, QRIS_MAX_LENGTH, validateVendorQris } from '../../gateways/qris.ts';

// Real payloads with CRCs verified independently: label<TAB>CRC<TAB>payload.
const vectors = readFileSync(new URL('../fixtures/qris-vectors.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim() && !line.startsWith('#'))
  .map((line) => {
    const [label, crc, payload] = line.split('\t');
    return { label, crc, payload };
  });

const sample = {
  merchantName: 'Toko Kopi Nusantara',
  merchantCity: 'Jakarta Selatan',
  amount: 150000,
  billNumber: 'ORD-1732230000000-AB12CD',
  nmid: 'ID1026000000001',
};

/** Re-seals a hand-edited payload with a correct CRC, so a test reaches the check it aims at. */
function reseal(withoutCrc: string): string {
  return withoutCrc + '6304' + crc16ccittFalse(withoutCrc + '6304');
}

/** Drops one top-level tag from a payload body (no CRC). */
function withoutTag(body: string, tag: string): string {
  const parsed = parseQris(reseal(body));
  if (!parsed.ok) throw new Error(parsed.error);
  const value = parsed.tags.get(tag)!;
  return body.replace(tag + String(value.length).padStart(2, '0') + value, '');
}

/** Appends RFU tags (65..79, reserved for future use) until body + CRC field is `total` long. */
function padTo(body: string, total: number): string {
  let out = body;
  for (let tag = 65; out.length + 8 < total; tag++) {
    const length = Math.min(99, total - 8 - out.length - 4);
    out += String(tag) + String(length).padStart(2, '0') + 'X'.repeat(length);
  }
  return out;
}

t.test('CRC-16/CCITT-FALSE', async (t) => {
  t.equal(crc16ccittFalse('123456789'), '29B1', 'standard check value');
  t.equal(vectors.length, 2);
  for (const { label, crc, payload } of vectors) {
    t.equal(crc16ccittFalse(payload.slice(0, -4)), crc, `${label} CRC`);
  }
});

t.test('real payloads parse', async (t) => {
  const [staticBni, dynamicWinpay] = vectors;
  const s = parseQris(staticBni.payload);
  if (!s.ok) throw new Error(s.error);
  t.equal(s.dynamic, false);
  t.equal(s.amount, null);
  t.equal(s.merchantName, 'VFS GLOBAL 6');
  t.equal(s.merchantCity, 'JAKARTA SELATAN');
  t.equal(s.nmid, 'ID2022233782269');

  const d = parseQris(dynamicWinpay.payload);
  if (!d.ok) throw new Error(d.error);
  t.equal(d.dynamic, true);
  t.equal(d.amount, 50000);
  t.equal(d.billNumber, '39870');
  t.equal(d.tags.get('26'), '0024ID.CO.SPEEDCASH.MERCHANT01189360081530001108500215ID10210000000190303UME');

  t.equal(validateVendorQris(dynamicWinpay.payload, 50000), null);
  t.match(validateVendorQris(dynamicWinpay.payload, 50001), /amount .* expected 50001/);
  t.match(validateVendorQris(staticBni.payload, 50000), /static/);
});

t.test('a lowercase CRC is accepted', async (t) => {
  const { payload } = vectors[1];
  t.equal(parseQris(payload.slice(0, -4) + payload.slice(-4).toLowerCase()).ok, true);
});

t.test('build then parse round-trips', async (t) => {
  const text = buildDynamicQris({ ...sample, postalCode: '12940', referenceLabel: 'qr_0123456789', terminalLabel: 'SIM' });
  t.match(text, /^000201010212/, 'dynamic payload starts with 00 and 01=12');
  t.match(text, /6304[0-9A-F]{4}$/, 'uppercase CRC last');
  const parsed = parseQris(text);
  if (!parsed.ok) throw new Error(parsed.error);
  t.equal(parsed.amount, 150000);
  t.equal(parsed.tags.get('54'), '150000');
  t.equal(parsed.tags.get('53'), '360');
  t.equal(parsed.tags.get('58'), 'ID');
  t.equal(parsed.tags.get('61'), '12940');
  t.equal(parsed.merchantName, 'Toko Kopi Nusantara');
  t.equal(parsed.billNumber, sample.billNumber);
  t.equal(parsed.nmid, sample.nmid);
  t.match(parsed.tags.get('51'), /^0014ID\.CO\.QRIS\.WWW0215ID10260000000010303UMI$/);
  t.match(parsed.tags.get('62'), /0513qr_01234567890703SIM$/);
  t.equal(validateVendorQris(text, 150000), null);
});

t.test('builder sanitizes and limits free text', async (t) => {
  const text = buildDynamicQris({ ...sample, merchantName: 'Kedai Kópi\tÇikini — Menteng Raya Jakarta', merchantCity: 'Kota Jakarta Pusat Raya' });
  const parsed = parseQris(text);
  if (!parsed.ok) throw new Error(parsed.error);
  t.equal(parsed.merchantName, 'Kedai Kopi Cikini Menteng');
  t.ok(parsed.merchantName.length <= 25);
  t.equal(parsed.merchantCity, 'Kota Jakarta Pu');

  t.equal(validateVendorQris(buildDynamicQris({ ...sample, amount: 9_999_999_999_999 }), 9_999_999_999_999), null, '13-digit amount fits');
  for (const amount of [0, -1, 1.5, 10_000_000_000_000]) {
    t.throws(() => buildDynamicQris({ ...sample, amount }), RangeError, `amount ${amount}`);
  }
  t.throws(() => buildDynamicQris({ ...sample, billNumber: 'X'.repeat(26) }), RangeError, 'bill number over 25');
  t.throws(() => buildDynamicQris({ ...sample, merchantName: '日本' }), RangeError, 'nothing printable');
  t.throws(() => buildDynamicQris({ ...sample, mcc: '59' }), RangeError, 'short MCC');
});

t.test('tampered payloads are rejected', async (t) => {
  const text = buildDynamicQris(sample);
  const badCrc = text.slice(0, -1) + (text.endsWith('0') ? '1' : '0');
  t.match(parseQris(badCrc), { ok: false, error: /CRC mismatch/ });
  // Changing the amount without re-sealing is what a tampered QR looks like.
  t.match(parseQris(text.replace('5406150000', '5406950000')), { ok: false, error: /CRC mismatch/ });
  t.match(validateVendorQris(badCrc, 150000), /CRC/);
});

t.test('malformed TLV is rejected', async (t) => {
  const text = buildDynamicQris(sample);
  t.match(parseQris(''), { ok: false, error: /empty/ });
  t.match(parseQris(text.slice(0, 10)), { ok: false, error: /runs past the end/ });
  t.match(parseQris('00020101X212' + text.slice(12)), { ok: false, error: /malformed tag\/length/ });
  t.match(parseQris(reseal('0000')), { ok: false, error: /empty value/ });
  t.match(parseQris(text + '00'), { ok: false, error: /malformed/ }, 'trailing garbage');
});

t.test('required tags and their order', async (t) => {
  const text = buildDynamicQris(sample);
  const body = text.slice(0, -8);
  t.equal(parseQris(reseal(body)).ok, true, 'reseal keeps a valid payload valid');
  t.match(parseQris(reseal(body.replace('000201', '000202'))), { ok: false, error: /start with tag 00/ });
  t.match(parseQris(reseal(body.slice(6) + '000201')), { ok: false, error: /start with tag 00/ }, '00 not first');
  const no58 = body.replace('5802ID', '');
  t.match(parseQris(no58 + '6304' + crc16ccittFalse(no58 + '6304') + '5802ID'), { ok: false, error: /end with tag 63/ });
  t.match(parseQris(reseal(body + '5802ID')), { ok: false, error: /tag 58 appears twice/ });
  t.match(parseQris(reseal(body.replace('010212', '010213'))), { ok: false, error: /tag 01/ });
  t.match(parseQris(reseal(body.replace('5303360', ''))), { ok: false, error: /lacks tag 53/ });
  t.match(parseQris(reseal(body.replace('52045999', '5204ABCD'))), { ok: false, error: /tag 52/ });
  t.match(parseQris(reseal(body.replace('5406150000', '5406150.0.'))), { ok: false, error: /tag 54/ });
  t.equal(parseQris(reseal(body.replace('5406150000', '5409150000.00'))).ok, true, 'decimal amount is valid EMVCo');
  t.match(parseQris(reseal(withoutTag(withoutTag(body, '26'), '51'))), { ok: false, error: /no merchant account/ });
  t.equal(parseQris(reseal(withoutTag(body, '26'))).ok, true, 'one merchant account template is enough');
  t.match(parseQris(reseal(body.replace('51440014', '51440114'))), { ok: false, error: /GUID/ });
  // A non-ascending order (61 before 60) is accepted: real payloads do not all sort their tags.
  const swapped = body.replace('6015Jakarta Selatan', '') + '6015Jakarta Selatan';
  t.equal(parseQris(reseal(swapped)).ok, true);
});

t.test('length limits', async (t) => {
  const text = buildDynamicQris(sample);
  const body = text.slice(0, -8);
  const atLimit = reseal(padTo(body, QRIS_MAX_LENGTH));
  t.equal(atLimit.length, QRIS_MAX_LENGTH);
  t.equal(parseQris(atLimit).ok, true, 'exactly 512 characters is fine');
  const overLimit = reseal(padTo(body, QRIS_MAX_LENGTH + 1));
  t.equal(overLimit.length, QRIS_MAX_LENGTH + 1);
  t.match(parseQris(overLimit), { ok: false, error: /over 512/ });
  t.match(parseQris(reseal(body.replace('5406150000', '541412345678901234'))), { ok: false, error: /tag 54/ }, '14-digit amount');
  t.match(parseQris(reseal(body.replace('5919Toko Kopi Nusantara', '5926Toko Kopi Nusantara Jaya A'))), { ok: false, error: /tag 59/ });
  t.match(parseQris(reseal(body.replace('6015Jakarta Selatan', '6016Jakarta Selatann'))), { ok: false, error: /tag 60/ });
});
