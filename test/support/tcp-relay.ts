// A loopback TCP relay whose target can be moved: clients keep one address while the server behind
// it is replaced (a restarted control plane comes back on a new ephemeral port). When the target's
// side of a connection closes, the client's side is closed too, so the client sees the server go.
import { connect, createServer, type Socket } from 'node:net';

export interface TcpRelay {
  /** Where clients connect. */
  readonly address: string;
  /** Client connections accepted so far. */
  connections(): number;
  /** New connections go to `target` (host:port); open ones stay where they are. */
  retarget(target: string): void;
  stop(): Promise<void>;
}

function hostPort(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i), port: Number(address.slice(i + 1)) };
}

export async function startTcpRelay(target: string): Promise<TcpRelay> {
  let current = hostPort(target);
  let count = 0;
  const open = new Set<Socket>();
  const server = createServer((inbound) => {
    count += 1;
    const outbound = connect(current);
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('close', () => {
        open.delete(s);
        inbound.destroy();
        outbound.destroy();
      });
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
    retarget(next) {
      current = hostPort(next);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
