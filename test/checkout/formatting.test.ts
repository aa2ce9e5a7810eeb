// The checkout page's pure parts: Rupiah formatting, the countdown text, HTML escaping, what
// the payer may see of a status, and which return URLs the page may redirect to.
import t from 'tap';
import { absoluteHttpUrl, publicStatus } from '../../api/checkout.ts';
import { escapeHtml, formatCountdown, html } from '../../api/checkout/page.ts';
import { formatRupiah } from '../../db/present/rupiah.ts';

t.test('formatRupiah: Rp, "." between thousands, no decimals, no space', async (t) => {
  const cases: Array<[number, string]> = [
    [0, 'Rp0'],
    [1, 'Rp1'],
    [999, 'Rp999'],
    [1_000, 'Rp1.000'],
    [15_000, 'Rp15.000'],
    [150_000, 'Rp150.000'],
    [1_250_000, 'Rp1.250.000'],
    [9_999_999_999_999, 'Rp9.999.999.999.999'],
    [-25_000, '-Rp25.000'],
  ];
  for (const [amount, text] of cases) t.equal(formatRupiah(amount), text, `${amount}`);
  t.throws(() => formatRupiah(1.5), RangeError, 'fractions are not rupiah');
  t.throws(() => formatRupiah(Number.NaN), RangeError);
  t.throws(() => formatRupiah(2 ** 53), RangeError, 'past the safe integers');
});

t.test('formatCountdown: m:ss under an hour, h:mm:ss above, never negative', async (t) => {
  t.equal(formatCountdown(0), '0:00');
  t.equal(formatCountdown(-5_000), '0:00');
  t.equal(formatCountdown(1), '0:01', 'a started second counts as left');
  t.equal(formatCountdown(59_000), '0:59');
  t.equal(formatCountdown(3_599_000), '59:59');
  t.equal(formatCountdown(3_600_000), '1:00:00');
  t.equal(formatCountdown(10_080 * 60_000), '168:00:00', 'the longest expire_minutes');
});

t.test('html escapes every interpolation that is not itself html', async (t) => {
  t.equal(escapeHtml(`<a href="x">'&'</a>`), '&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;');
  const name = '<script>alert(1)</script>';
  t.equal(html`<p title="${'"x"'}">${name}</p>`.text, '<p title="&#34;x&#34;">&#60;script&#62;alert(1)&#60;/script&#62;</p>');
  t.equal(html`<div>${html`<b>${'&'}</b>`}${[html`<i>`, '<', html`</i>`]}${null}${false}${0}</div>`.text, '<div><b>&#38;</b><i>&#60;</i>0</div>');
});

t.test('publicStatus: PENDING, PAID and EXPIRED only; a refunded order was paid', async (t) => {
  t.equal(publicStatus('PENDING'), 'PENDING');
  t.equal(publicStatus('PAID'), 'PAID');
  t.equal(publicStatus('REFUNDED'), 'PAID');
  t.equal(publicStatus('EXPIRED'), 'EXPIRED');
  t.equal(publicStatus('CREATING'), null, 'an unconfirmed attempt is no order yet');
  t.equal(publicStatus('FAILED'), null);
});

t.test('absoluteHttpUrl: what may be a redirect target (or a logo): absolute http(s) without credentials', async (t) => {
  t.equal(absoluteHttpUrl('https://shop.example.com/thanks?order=1'), 'https://shop.example.com/thanks?order=1');
  t.equal(absoluteHttpUrl('http://127.0.0.1:8080/back'), 'http://127.0.0.1:8080/back');
  t.equal(absoluteHttpUrl(null), null);
  t.equal(absoluteHttpUrl(''), null);
  t.equal(absoluteHttpUrl('javascript:alert(1)'), null);
  t.equal(absoluteHttpUrl('data:text/html,<b>x</b>'), null);
  t.equal(absoluteHttpUrl('//evil.example/'), null, 'protocol-relative is not absolute');
  t.equal(absoluteHttpUrl('/relative'), null);
  t.equal(absoluteHttpUrl('https://user:pass@shop.example.com/'), null);
});
