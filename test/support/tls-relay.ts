// A loopback relay that adds client TLS: plaintext in on 127.0.0.1, mTLS out with the given files.
// @grpc/grpc-js-xds 1.14 speaks only plaintext (or Google's credentials) to its xDS server, so tests
// put this in front of the secure port — the part a local Envoy or stunnel would play on a VM.
import { createServer, type Server, type Socket } from 'node:net';
import { connect } from 'node:tls';

export interface TlsRelay {
  readonly address: string;
  /** Connections relayed so far (the client did come through here). */
  readonly connections: () => number;
  stop(): Promise<void>;
}

export async function startTlsRelay(
  target: { host: string; port: number },
  files: { ca: Buffer; cert: Buffer; key: Buffer },
): Promise<TlsRelay> {
  let count = 0;
  const open = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    count += 1;
    const outbound = connect({ ...target, ...files, ALPNProtocols: ['h2'] });
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    address: `127.0.0.1:${port}`,
    connections: () => count,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
