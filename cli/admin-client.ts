// The CLI's client of a running Portolan's admin HTTP API (--http-addr): one GET with a deadline,
// and errors that say what to do instead of a socket error code.
import { OptionError, parseAddress } from '../adapters/option-values.js';
import { formatAddress } from './listen-errors.js';

/** The admin API could not answer (not running, wrong address, no such proxy). */
export class AdminError extends Error {}

/** The base URL for `--http-addr`; a wildcard listen address is reached on loopback. */
export function adminBase(httpAddr: string): string {
  const addr = parseAddress(httpAddr, '--http-addr');
  const host = addr.host === '0.0.0.0' ? '127.0.0.1' : addr.host === '::' ? '::1' : addr.host;
  if (addr.port === 0) throw new OptionError('--http-addr: give the port portolan serve listens on');
  return `http://${formatAddress({ host, port: addr.port })}`;
}

export async function getJson<T>(httpAddr: string, path: string, timeoutMs = 5000): Promise<T> {
  return requestJson<T>(httpAddr, path, timeoutMs);
}

/** A POST of a JSON body (the admin server's writes require the JSON content type). */
export async function postJson<T>(
  httpAddr: string,
  path: string,
  body: unknown,
  timeoutMs = 5000,
): Promise<T> {
  return requestJson<T>(httpAddr, path, timeoutMs, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function requestJson<T>(
  httpAddr: string,
  path: string,
  timeoutMs: number,
  init?: RequestInit,
): Promise<T> {
  const base = adminBase(httpAddr);
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    throw new AdminError(
      `cannot reach the Portolan admin API at ${base} (${cause === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : cause}): is portolan serve running with --http-addr ${httpAddr}?`,
    );
  }
  let text: string;
  try {
    text = await res.text();
  } catch {
    throw new AdminError(`${base}${path}: the answer was cut off or took over ${timeoutMs} ms`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    throw new AdminError(`${base}${path} answered ${res.status} with something that is not JSON`);
  }
  if (!res.ok) {
    const message = (body as { error?: unknown } | null)?.error;
    throw new AdminError(typeof message === 'string' ? message : `${base}${path} answered ${res.status}`);
  }
  return body as T;
}
