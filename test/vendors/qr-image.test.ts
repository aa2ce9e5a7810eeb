import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import t from 'tap';
import { renderQrPng } from '../../api/qr-image.ts';
import { buildDynamicQris } from '../../gateways/qris.ts';

// jsqr is CommonJS typed as an ES module: its function sits on `default` either way.
const jsQR = jsqr.default;

t.test('a rendered QRIS decodes back to the identical string', async (t) => {
  const text = buildDynamicQris({
    merchantName: 'Toko Kopi Nusantara',
    merchantCity: 'Jakarta',
    amount: 1_250_000,
    billNumber: 'ORD-1732230000000-AB12CD',
    nmid: 'ID1026000000001',
    terminalLabel: 'SIM',
  });
  const png = await renderQrPng(text);
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  const image = PNG.sync.read(png);
  t.equal(image.width, 360);
  const decoded = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
  t.equal(decoded?.data, text);
});
