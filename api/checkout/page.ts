// The checkout page's HTML. Every interpolation goes through the `html` tag, which escapes it
// unless it is itself Html built by the tag: merchant and brand names are text the page must
// never treat as markup. All three states are rendered; CSS shows the one named by
// data-status on <main>, so the client script only flips that attribute (checkout.js).

export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Time left as the countdown shows it: "59:07", "1:00:00" (checkout.js has the same rule). */
export function formatCountdown(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** The page's languages: Bahasa Indonesia (its payers'), and English. */
export type Language = 'id' | 'en';

/**
 * Every text of the pages, per language. Functions take what the sentence names; the result is
 * Html built by the tag, so names stay escaped.
 */
const TEXT = {
  id: {
    waiting: 'Menunggu pembayaran',
    qrAlt: (amount: string, merchant: string) => `Kode QRIS sebesar ${amount} untuk ${merchant}`,
    hint: 'Pindai dengan aplikasi bank atau dompet digital apa pun yang mendukung QRIS.',
    expiresIn: 'Berakhir dalam',
    paid: 'Lunas',
    thanks: (merchant: string) => html`Terima kasih, pembayaran Anda kepada ${merchant} telah selesai.`,
    returning: 'Mengarahkan Anda kembali ke penjual…',
    continue: 'Lanjutkan',
    close: 'Anda dapat menutup halaman ini.',
    expired: 'Kedaluwarsa',
    expiredText: (merchant: string) => html`Permintaan pembayaran ini telah kedaluwarsa dan tidak dapat dibayar lagi. Mintalah yang baru kepada ${merchant}.`,
    reference: 'Referensi',
    title: (amount: string, merchant: string) => `Bayar ${amount} ke ${merchant}`,
    questions: 'Ada pertanyaan tentang pembayaran?',
    paymentsBy: (brand: string) => `Pembayaran oleh ${brand}`,
    notFound: 'Pembayaran tidak ditemukan',
    notFoundText: 'Tautan pembayaran ini tidak berlaku. Periksa tautan yang Anda terima, atau mintalah tautan baru kepada penjual.',
  },
  en: {
    waiting: 'Waiting for payment',
    qrAlt: (amount: string, merchant: string) => `QRIS code for ${amount} to ${merchant}`,
    hint: 'Scan with any QRIS-enabled banking or e-wallet app.',
    expiresIn: 'Expires in',
    paid: 'Paid',
    thanks: (merchant: string) => html`Thank you, your payment to ${merchant} is complete.`,
    returning: 'Taking you back to the merchant…',
    continue: 'Continue',
    close: 'You can close this page.',
    expired: 'Expired',
    expiredText: (merchant: string) => html`This payment request has expired and can no longer be paid. Ask ${merchant} for a new one.`,
    reference: 'Reference',
    title: (amount: string, merchant: string) => `Pay ${amount} to ${merchant}`,
    questions: 'Questions about a payment?',
    paymentsBy: (brand: string) => `Payments by ${brand}`,
    notFound: 'Payment not found',
    notFoundText: 'This payment link is not valid. Check the link you were given, or ask the merchant for a new one.',
  },
} satisfies Record<Language, unknown>;

/**
 * The page's language: the first of Indonesian and English the payer's Accept-Language ranks
 * above zero (by q, then by order), else the brand's choice (Bahasa Indonesia by default).
 */
export function pageLanguage(acceptLanguage: string | undefined, brandDefault: Language): Language {
  let best: { language: Language; q: number; index: number } | null = null;
  for (const [index, part] of (acceptLanguage ?? '').split(',').entries()) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const language = tag.split('-')[0];
    if (language !== 'id' && language !== 'en' && language !== 'in') continue; // "in": the old code for Indonesian
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!(q > 0)) continue;
    const candidate = { language: (language === 'en' ? 'en' : 'id') as Language, q, index };
    if (!best || q > best.q) best = candidate;
  }
  return best?.language ?? brandDefault;
}

export interface PageBrand {
  name: string;
  /** Already checked to be an absolute http(s) URL (its origin is in the CSP's img-src). */
  logoUrl: string | null;
  supportEmail: string | null;
}

export interface PageAssets {
  script: string;
  style: string;
  icon: string;
}

export interface CheckoutView {
  brand: PageBrand;
  assets: PageAssets;
  ref: string;
  merchantName: string;
  amountText: string;
  status: 'PENDING' | 'PAID' | 'EXPIRED';
  /** Path of the QR image, null when the order has no QR. */
  qrPath: string | null;
  expiresAt: string | null;
  /** Milliseconds left when the page was rendered (server clock), null without expiry. */
  expiresInMs: number | null;
  statusPath: string;
  returnPath: string | null;
}

function layout(brand: PageBrand, assets: PageAssets, lang: Language, title: string, body: Html, withScript: boolean): string {
  const t = TEXT[lang];
  return html`<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<link rel="icon" href="${assets.icon}">
<title>${title}</title>
<link rel="stylesheet" href="${assets.style}">
${withScript ? html`<script src="${assets.script}" defer></script>` : ''}
</head>
<body>
<div class="page">
<header class="brand">
${brand.logoUrl ? html`<img class="logo" src="${brand.logoUrl}" alt="${brand.name}">` : html`<span class="brand-name">${brand.name}</span>`}
</header>
${body}
<footer class="support">
${brand.supportEmail ? html`${t.questions} <a href="mailto:${brand.supportEmail}">${brand.supportEmail}</a>` : t.paymentsBy(brand.name)}
</footer>
</div>
</body>
</html>
`.text;
}

export function checkoutPage(v: CheckoutView, lang: Language = 'id'): string {
  const t = TEXT[lang];
  const body = html`<main id="checkout" class="card" data-status="${v.status}" data-status-path="${v.statusPath}"
  ${v.returnPath ? html`data-return-path="${v.returnPath}"` : ''}
  ${v.expiresInMs === null ? '' : html`data-expires-in-ms="${Math.max(0, Math.round(v.expiresInMs))}"`}>
<p class="merchant" id="merchant">${v.merchantName}</p>
<p class="amount" id="amount">${v.amountText}</p>
<div aria-live="polite">
<section class="state when-pending">
<h1>${t.waiting}</h1>
${v.qrPath ? html`<img id="qr" class="qr" src="${v.qrPath}" width="240" height="240" alt="${t.qrAlt(v.amountText, v.merchantName)}">` : ''}
<p class="hint">${t.hint}</p>
${v.expiresAt === null || v.expiresInMs === null
    ? ''
    : html`<p class="countdown">${t.expiresIn} <time id="countdown" datetime="${v.expiresAt}">${formatCountdown(v.expiresInMs)}</time></p>`}
</section>
<section class="state when-paid">
<h1>${t.paid}</h1>
<p>${t.thanks(v.merchantName)}</p>
${v.returnPath
    ? html`<p>${t.returning} <a id="return-link" href="${v.returnPath}">${t.continue}</a></p>`
    : html`<p>${t.close}</p>`}
</section>
<section class="state when-expired">
<h1>${t.expired}</h1>
<p>${t.expiredText(v.merchantName)}</p>
</section>
</div>
<p class="reference">${t.reference} <span id="reference">${v.ref}</span></p>
</main>`;
  return layout(v.brand, v.assets, lang, `${t.title(v.amountText, v.merchantName)} · ${v.brand.name}`, body, true);
}

export function notFoundPage(brand: PageBrand, assets: PageAssets, lang: Language = 'id'): string {
  const t = TEXT[lang];
  const body = html`<main class="card" id="not-found">
<h1>${t.notFound}</h1>
<p>${t.notFoundText}</p>
</main>`;
  return layout(brand, assets, lang, `${t.notFound} · ${brand.name}`, body, false);
}
