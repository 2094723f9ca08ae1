// The wall-clock timestamps kept in stream state (when a response went out, when it was ACKed: the
// admin pages show them). Formatted once per millisecond, not once per request: a fan-out writes
// thousands of responses within one, and they then share one string instead of holding a copy each.
let lastMs = -1;
let lastIso = '';

/** new Date().toISOString(), reused within the same millisecond. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
