// A listen address that cannot be bound, said the way the user wrote it: `--xds-addr
// 127.0.0.1:25010 is already in use`, not the wording of whichever library tried to bind it.
import { createServer } from 'node:net';
import { OptionError, type HostAndPort } from '../adapters/option-values.js';

export function formatAddress({ host, port }: HostAndPort): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The error to report for a failed bind of `flag`: in use, or the underlying reason. */
export async function listenFailure(flag: string, addr: HostAndPort, err: unknown): Promise<OptionError> {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE' || (await inUse(addr)))
    return new OptionError(`${flag} ${formatAddress(addr)} is already in use`);
  if (code === 'EADDRNOTAVAIL')
    return new OptionError(`${flag} ${formatAddress(addr)}: no such address on this machine`);
  if (code === 'EACCES') return new OptionError(`${flag} ${formatAddress(addr)}: permission denied`);
  const message = err instanceof Error ? err.message : String(err);
  return new OptionError(`${flag} ${formatAddress(addr)}: cannot listen: ${message}`);
}

// gRPC's bind error does not carry the errno: try the address the way it would be bound.
function inUse({ host, port }: HostAndPort): Promise<boolean> {
  if (port === 0) return Promise.resolve(false);
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'EADDRINUSE'));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

/** Whether `host` is a loopback address or name (the admin port's safe default). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
