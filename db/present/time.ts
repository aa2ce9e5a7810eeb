// Timestamps at the edge: V1 speaks ISO 8601 UTC with Z; legacy speaks WIB (UTC+7) wall time.
const WIB_OFFSET_MS = 7 * 60 * 60 * 1000;

export function iso(date: Date | null): string | null {
  return date ? date.toISOString() : null;
}

/** "YYYY-MM-DD HH:MM:SS" in Western Indonesia Time (no DST, fixed +07:00). */
export function wib(date: Date | null): string | null {
  if (!date) return null;
  return new Date(date.getTime() + WIB_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');
}
