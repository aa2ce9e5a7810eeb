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

function layout(brand: PageBrand, assets: PageAssets, title: string, body: Html, withScript: boolean): string {
  return html`<!doctype html>
<html lang="en">
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
${brand.supportEmail ? html`Questions about a payment? <a href="mailto:${brand.supportEmail}">${brand.supportEmail}</a>` : html`Payments by ${brand.name}`}
</footer>
</div>
</body>
</html>
`.text;
}

export function checkoutPage(v: CheckoutView): string {
  const body = html`<main id="checkout" class="card" data-status="${v.status}" data-status-path="${v.statusPath}"
  ${v.returnPath ? html`data-return-path="${v.returnPath}"` : ''}
  ${v.expiresInMs === null ? '' : html`data-expires-in-ms="${Math.max(0, Math.round(v.expiresInMs))}"`}>
<p class="merchant" id="merchant">${v.merchantName}</p>
<p class="amount" id="amount">${v.amountText}</p>
<div aria-live="polite">
<section class="state when-pending">
<h1>Waiting for payment</h1>
${v.qrPath ? html`<img id="qr" class="qr" src="${v.qrPath}" width="240" height="240" alt="QRIS code for ${v.amountText} to ${v.merchantName}">` : ''}
<p class="hint">Scan with any QRIS-enabled banking or e-wallet app.</p>
${v.expiresAt === null || v.expiresInMs === null
    ? ''
    : html`<p class="countdown">Expires in <time id="countdown" datetime="${v.expiresAt}">${formatCountdown(v.expiresInMs)}</time></p>`}
</section>
<section class="state when-paid">
<h1>Paid</h1>
<p>Thank you, your payment to ${v.merchantName} is complete.</p>
${v.returnPath
    ? html`<p>Taking you back to the merchant… <a id="return-link" href="${v.returnPath}">Continue</a></p>`
    : html`<p>You can close this page.</p>`}
</section>
<section class="state when-expired">
<h1>Expired</h1>
<p>This payment request has expired and can no longer be paid. Ask ${v.merchantName} for a new one.</p>
</section>
</div>
<p class="reference">Reference <span id="reference">${v.ref}</span></p>
</main>`;
  return layout(v.brand, v.assets, `Pay ${v.amountText} to ${v.merchantName} · ${v.brand.name}`, body, true);
}

export function notFoundPage(brand: PageBrand, assets: PageAssets): string {
  const body = html`<main class="card" id="not-found">
<h1>Payment not found</h1>
<p>This payment link is not valid. Check the link you were given, or ask the merchant for a new one.</p>
</main>`;
  return layout(brand, assets, `Payment not found · ${brand.name}`, body, false);
}
