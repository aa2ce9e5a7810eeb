// The checkout page's behaviour (served as /pay/assets/checkout.js; the CSP allows no inline
// script). The server rendered every state; this only moves <main data-status> along: it polls
// the order's status until PAID or EXPIRED, ticks the countdown, and after PAID leaves for the
// merchant through /pay/<ref>/return, which redirects only a paid order, only to http(s).
(() => {
  'use strict';
  // Every open page asks once per POLL_MS: a payer sees the change within about two seconds,
  // and a thousand open pages cost the API some 500 indexed lookups a second.
  const POLL_MS = 2000;
  const MAX_POLL_MS = 30000; // back-off ceiling while the server does not answer
  const REDIRECT_MS = 3000; // long enough to read "Paid" before leaving

  const root = document.getElementById('checkout');
  if (!root) return;
  const statusPath = root.dataset.statusPath;
  const returnPath = root.dataset.returnPath;
  const countdown = document.getElementById('countdown');
  const leftAtLoad = root.dataset.expiresInMs === undefined ? null : Number(root.dataset.expiresInMs);
  const loadedAt = performance.now();
  let failures = 0;
  let ticker = null;
  let leaving = false;

  function formatCountdown(ms) {
    const total = Math.max(0, Math.ceil(ms / 1000));
    const h = Math.floor(total / 3600);
    const m = Math.floor((total % 3600) / 60);
    const s = String(total % 60).padStart(2, '0');
    return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
  }

  function tick() {
    const left = Math.max(0, leftAtLoad - (performance.now() - loadedAt));
    countdown.textContent = formatCountdown(left);
    if (left === 0) {
      // Time is up, but only the server says EXPIRED (a payment may still be on its way).
      root.dataset.overdue = 'true';
      clearInterval(ticker);
    }
  }

  function show(status) {
    if (status !== 'PENDING' && status !== 'PAID' && status !== 'EXPIRED') return;
    root.dataset.status = status;
    if (status === 'PENDING') return;
    clearInterval(ticker);
    if (status === 'PAID' && returnPath && !leaving) {
      leaving = true;
      setTimeout(() => location.replace(returnPath), REDIRECT_MS);
    }
  }

  async function poll() {
    try {
      const res = await fetch(statusPath, { cache: 'no-store', headers: { accept: 'application/json' } });
      if (!res.ok) throw new Error(`status ${res.status}`);
      show((await res.json()).status);
      failures = 0;
    } catch {
      failures += 1;
    }
    if (root.dataset.status === 'PENDING') setTimeout(poll, Math.min(POLL_MS * 2 ** failures, MAX_POLL_MS));
  }

  if (root.dataset.status === 'PENDING') {
    if (countdown && leftAtLoad !== null) {
      tick();
      ticker = setInterval(tick, 1000);
    }
    setTimeout(poll, POLL_MS);
  } else {
    show(root.dataset.status);
  }
})();
