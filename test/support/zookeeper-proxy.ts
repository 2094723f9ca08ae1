// A loopback TCP proxy in front of a ZooKeeper server, so a test can cut one client off — or leave it
// connected to a server that no longer answers — while the server itself keeps running.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export interface ZooKeeperProxy {
  /** `127.0.0.1:PORT`: connect here instead of to the server. */
  readonly connectString: string;
  /** Drops every connection and refuses new ones (they are accepted and closed at once). */
  cut(): void;
  /** Keeps connections open but passes nothing either way, and holds new ones the same way. */
  hang(): void;
  /** Forwards again (connections held by `hang` are dropped). */
  restore(): void;
  /** Client connections accepted so far (each reconnect attempt is one). */
  connections(): number;
  close(): Promise<void>;
}

type Mode = 'forward' | 'cut' | 'hang';

export async function startZooKeeperProxy(targetPort: number): Promise<ZooKeeperProxy> {
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  };
  let mode: Mode = 'forward';
  let accepted = 0;
  const server = createServer((downstream) => {
    accepted++;
    track(downstream);
    if (mode === 'cut') {
      downstream.destroy();
      return;
    }
    if (mode === 'hang') return;
    const upstream = connect({ host: '127.0.0.1', port: targetPort });
    track(upstream);
    downstream.pipe(upstream);
    upstream.pipe(downstream);
    downstream.on('close', () => upstream.destroy());
    upstream.on('close', () => downstream.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const dropAll = (): void => {
    for (const s of sockets) s.destroy();
  };
  return {
    connectString: `127.0.0.1:${port}`,
    cut() {
      mode = 'cut';
      dropAll();
    },
    hang() {
      mode = 'hang';
      for (const s of sockets) {
        s.unpipe();
        s.pause();
      }
    },
    restore() {
      if (mode === 'hang') dropAll();
      mode = 'forward';
    },
    connections: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        dropAll();
        server.close(() => resolve());
      }),
  };
}
