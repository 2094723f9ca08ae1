// Parsing of flag values shared by `portolan serve` and the registries' own flags. It imports nothing
// from the CLI, so adapters can use it without an import cycle through the registry table.

/** A bad flag value; the CLI prints it and exits 2. */
export class OptionError extends Error {}

export interface HostAndPort {
  readonly host: string;
  readonly port: number;
}

/** `HOST:PORT` or `[V6]:PORT`; port 0 picks a free port (the chosen one is logged). */
export function parseAddress(text: string, flag: string): HostAndPort {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  const host = m ? (m[1] ?? m[2] ?? '') : '';
  if (!m || port > 65535 || !host) throw new OptionError(`${flag}: expected HOST:PORT, got "${text}"`);
  return { host, port };
}

/** `250ms`, `1.5s`, `2m`, or a bare number of milliseconds. */
export function parseDurationMs(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new OptionError(`${flag}: expected a duration like 100ms or 1s, got "${text}"`);
  const n = Number(m[1]);
  const unit = m[2] ?? 'ms';
  return Math.round(unit === 'ms' ? n : unit === 's' ? n * 1000 : n * 60_000);
}

export function parsePositiveInt(text: string, flag: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1)
    throw new OptionError(`${flag}: expected a positive integer, got "${text}"`);
  return Number(text);
}
