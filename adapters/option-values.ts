// Parsing of flag values shared by `portolan serve` and the registries' own flags. It imports nothing
// from the CLI, so adapters can use it without an import cycle through the registry table.

import { durationMs } from '../model/duration.js';

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

/** One number with `ms`, `s` or `m` (`250ms`, `1.5s`, `2m`), or a bare number of milliseconds. */
export function parseDurationMs(text: string, flag: string): number {
  const trimmed = text.trim();
  const ms = /^\d+(?:\.\d+)?(ms|s|m)?$/.test(trimmed)
    ? durationMs(/\d$/.test(trimmed) ? `${trimmed}ms` : trimmed)
    : undefined;
  if (ms === undefined) throw new OptionError(`${flag}: expected a duration like 100ms or 1s, got "${text}"`);
  return Math.round(ms);
}

export function parsePositiveInt(text: string, flag: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1)
    throw new OptionError(`${flag}: expected a positive integer, got "${text}"`);
  return Number(text);
}
