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
  /**
   * Whether the client is caught up with the nodes of `tree` (every node now under its root), as
   * the wire shows: every request answered, every node read with a watch, and every node the
   * server notified a change of read again with a watch since (the client re-arms a watch only
   * once it has handled the notification).
   */
  caughtUp(tree: ReadonlySet<string>): boolean;
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
  const tap = new WireTap();
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
    const conversation = tap.connection();
    downstream.on('data', (chunk: Buffer) => conversation.fromClient(chunk));
    upstream.on('data', (chunk: Buffer) => conversation.fromServer(chunk));
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
    caughtUp: (tree) => tap.caughtUp(tree),
    close: () =>
      new Promise<void>((resolve) => {
        dropAll();
        server.close(() => resolve());
      }),
  };
}

// ---- what the wire says (jute framing: a 4-byte length, then the record) ----

/** Reads that can set a watch: exists, getData, getChildren, getChildren2. */
const WATCHING_READS = new Set([3, 4, 8, 12]);
const NOTIFICATION_XID = -1;

/** Splits one direction of a connection into frames; the first (connect request or response) is skipped. */
function framer(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let buffered = Buffer.alloc(0);
  let first = true;
  return (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4) {
      const length = buffered.readInt32BE(0);
      if (buffered.length < 4 + length) return;
      const frame = buffered.subarray(4, 4 + length);
      buffered = buffered.subarray(4 + length);
      if (first) first = false;
      else onFrame(frame);
    }
  };
}

function readPath(frame: Buffer, at: number): string {
  const length = frame.readInt32BE(at);
  return frame.toString('utf8', at + 4, at + 4 + length);
}

class WireTap {
  /** Requests sent and not answered yet, by xid. */
  private readonly outstanding = new Set<number>();
  /** Per node: the sequence number of the last change notified, and of the last watching read. */
  private readonly notified = new Map<string, number>();
  private readonly rearmed = new Map<string, number>();
  private seq = 0;

  connection(): { fromClient: (chunk: Buffer) => void; fromServer: (chunk: Buffer) => void } {
    // A new connection answers nothing the old one was asked.
    this.outstanding.clear();
    return {
      fromClient: framer((frame) => {
        if (frame.length < 8) return;
        const xid = frame.readInt32BE(0);
        const type = frame.readInt32BE(4);
        if (xid >= 0) this.outstanding.add(xid);
        if (WATCHING_READS.has(type) && frame.length >= 12) {
          const path = readPath(frame, 8);
          const watch = frame[12 + Buffer.byteLength(path)] === 1;
          if (watch) this.rearmed.set(path, ++this.seq);
        }
      }),
      fromServer: framer((frame) => {
        if (frame.length < 16) return;
        const xid = frame.readInt32BE(0);
        if (xid === NOTIFICATION_XID) this.notified.set(readPath(frame, 24), ++this.seq);
        else this.outstanding.delete(xid);
      }),
    };
  }

  caughtUp(tree: ReadonlySet<string>): boolean {
    if (this.outstanding.size > 0) return false;
    for (const path of tree) {
      const rearmed = this.rearmed.get(path);
      if (rearmed === undefined || rearmed < (this.notified.get(path) ?? 0)) return false;
    }
    return true;
  }
}
