// Credit amounts are integers in nano-USD (1e-9 USD): no float drift in balances or the ledger.

export const NANO_PER_USD = 1_000_000_000;

export const usdToNano = (usd: number): number => Math.round(usd * NANO_PER_USD);
export const nanoToUsd = (nano: number): number => Number(nano) / NANO_PER_USD;

/** USD with 6 decimals, rounded half away from zero, computed on integers (no float drift). */
export function formatUsd(nano: number): string {
  const n = Math.round(Number(nano));
  const sign = n < 0 ? '-' : '';
  const micro = Math.round(Math.abs(n) / 1000);
  const whole = Math.floor(micro / 1_000_000);
  const frac = String(micro % 1_000_000).padStart(6, '0');
  return `${sign}${whole}.${frac}`;
}

/** A USD amount rounded to 6 decimals, as a JSON number. */
export const roundUsd = (nano: number): number => Number(formatUsd(nano));

/** Nano-USD as the decimal text of a `numeric` USD value (exact). */
export function nanoToUsdText(nano: number): string {
  const n = Math.round(Number(nano));
  const sign = n < 0 ? '-' : '';
  const a = Math.abs(n);
  return `${sign}${Math.floor(a / NANO_PER_USD)}.${String(a % NANO_PER_USD).padStart(9, '0')}`;
}
