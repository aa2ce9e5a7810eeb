// Renders a QRIS payload as the PNG a merchant shows to payers. Error correction M (15%) is
// what QRIS printouts use: it survives a smudged screen without making the code too dense.
import QRCode from 'qrcode';

export async function renderQrPng(text: string): Promise<Buffer> {
  return QRCode.toBuffer(text, { type: 'png', width: 360, margin: 2, errorCorrectionLevel: 'M' });
}
