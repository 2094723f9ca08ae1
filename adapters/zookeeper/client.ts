// One ZooKeeper session through node-zookeeper-client, with promise-returning reads. A missing node
// is an answer (undefined / false), not an error; anything else rejects with a ZkError carrying
// ZooKeeper's code. The client reconnects by itself within the session; once the session has expired
// it is dead, and the owner opens a new one.
//
// Two timeouts the client lacks are added here. node-zookeeper-client (1.1.3) stops its connect timer
// once TCP connects, and has no read timeout: a server that accepts a connection but never answers —
// ZooKeeper 3.8.0 does exactly that to a connection arriving while it starts — would hold the client
// forever. So a handshake not answered within the client's own connect timeout, or a probe read not
// answered within two thirds of the session timeout (the Java client's read timeout), drops the
// socket, and the client does what it does on any lost connection: reconnect, in the same session.
import { EventEmitter } from 'node:events';
import zookeeper from 'node-zookeeper-client';

export type Watcher = (event: zookeeper.Event) => void;

export class ZkError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Errors that mean the connection or session went away: a resync follows, nothing else to do. */
export function isConnectionError(err: unknown): boolean {
  return (
    err instanceof ZkError &&
    (err.code === zookeeper.Exception.CONNECTION_LOSS || err.code === zookeeper.Exception.SESSION_EXPIRED)
  );
}

export interface ZkSessionEvents {
  connected: [];
  disconnected: [];
  expired: [];
  authenticationFailed: [];
  /** The server stopped answering (handshake or probe); the connection was dropped to reconnect. */
  unresponsive: [what: 'handshake' | 'probe'];
}

export interface ZkSessionOptions {
  readonly sessionTimeoutMs: number;
  readonly spinDelayMs: number;
}

export class ZkSession extends EventEmitter<ZkSessionEvents> {
  private readonly client: zookeeper.Client;
  private readonly connectTimeoutMs: number;
  private readonly spinDelayMs: number;
  /** Handshakes dropped in a row: each one gives the next attempt longer (see armHandshakeTimer). */
  private handshakeDrops = 0;
  private closed = false;
  private handshakeTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private probeInFlight = false;

  constructor(hosts: string, { sessionTimeoutMs, spinDelayMs }: ZkSessionOptions) {
    super();
    this.client = zookeeper.createClient(hosts, { sessionTimeout: sessionTimeoutMs, spinDelay: spinDelayMs });
    // The client's own connect timeout: the session timeout shared among the servers.
    const servers = hosts.split('/')[0]?.split(',').length ?? 1;
    this.connectTimeoutMs = Math.max(250, Math.floor(sessionTimeoutMs / servers));
    this.spinDelayMs = spinDelayMs;
    this.client.on('connected', () => {
      clearTimeout(this.handshakeTimer);
      this.handshakeDrops = 0;
      this.startProbing();
      this.emit('connected');
    });
    this.client.on('disconnected', () => {
      this.stopProbing();
      this.armHandshakeTimer();
      this.emit('disconnected');
    });
    this.client.on('expired', () => {
      this.stopProbing();
      this.emit('expired');
    });
    this.client.on('authenticationFailed', () => this.emit('authenticationFailed'));
  }

  connect(): void {
    this.armHandshakeTimer();
    this.client.connect();
  }

  /** Closes the session (its ephemeral nodes go with it); idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.handshakeTimer);
    this.stopProbing();
    const connected = this.isConnected();
    this.client.removeAllListeners();
    this.client.close();
    // Unconnected, the close request is never sent and the socket would stay; connected, give the
    // server a moment to end the session, then let go regardless.
    if (!connected) dropSocket(this.client);
    else setTimeout(() => dropSocket(this.client), 2000).unref();
  }

  isConnected(): boolean {
    const state = this.client.getState();
    return state === zookeeper.State.SYNC_CONNECTED || state === zookeeper.State.CONNECTED_READ_ONLY;
  }

  /** The session id in hex, as ZooKeeper's own tools print it (all zeros before the first connect). */
  sessionId(): string {
    return `0x${this.client.getSessionId().toString('hex')}`;
  }

  /** The children of `path`, leaving a child watch; undefined if there is no such node. */
  children(path: string, watcher: Watcher): Promise<string[] | undefined> {
    return new Promise((resolve, reject) => {
      this.client.getChildren(path, watcher, (error, children) => {
        if (!error) resolve(children);
        else if (codeOf(error) === zookeeper.Exception.NO_NODE) resolve(undefined);
        else reject(toZkError(error, path));
      });
    });
  }

  /** Whether `path` exists, leaving a watch that fires when it is created (or changed or deleted). */
  exists(path: string, watcher: Watcher): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.client.exists(path, watcher, (error, stat) => {
        if (error) reject(toZkError(error, path));
        else resolve(Boolean(stat));
      });
    });
  }

  /** The data of `path`, leaving a data watch; undefined if there is no such node. */
  data(path: string, watcher: Watcher): Promise<Buffer | undefined> {
    return new Promise((resolve, reject) => {
      this.client.getData(path, watcher, (error, data) => {
        if (!error) resolve(data ?? Buffer.alloc(0));
        else if (codeOf(error) === zookeeper.Exception.NO_NODE) resolve(undefined);
        else reject(toZkError(error, path));
      });
    });
  }

  // The deadline covers the client's own wait before it reconnects (up to spinDelay) plus one
  // connect timeout, and doubles with each handshake dropped in a row (up to 4×): a fixed period
  // equal to the spin delay can cut every attempt just as it starts, and a slow but live server
  // (a loaded machine) must get a handshake through eventually, or an expired session is never
  // learned of.
  private armHandshakeTimer(): void {
    clearTimeout(this.handshakeTimer);
    const deadlineMs = this.spinDelayMs + this.connectTimeoutMs * 2 ** Math.min(this.handshakeDrops, 2);
    this.handshakeTimer = setTimeout(() => {
      if (this.closed || this.isConnected()) return;
      this.handshakeDrops++;
      this.drop('handshake');
      this.armHandshakeTimer();
    }, deadlineMs);
  }

  private startProbing(): void {
    this.stopProbing();
    // The negotiated timeout: the server may have clamped the one asked for.
    const sessionTimeoutMs = this.client.getSessionTimeout();
    const readTimeoutMs = Math.floor((sessionTimeoutMs * 2) / 3);
    this.probeTimer = setInterval(
      () => this.probe(readTimeoutMs),
      Math.max(100, Math.floor(sessionTimeoutMs / 3)),
    );
  }

  private stopProbing(): void {
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.probeInFlight = false;
  }

  private probe(readTimeoutMs: number): void {
    if (this.probeInFlight || !this.isConnected()) return;
    this.probeInFlight = true;
    const timer = setTimeout(() => {
      if (this.probeInFlight && this.isConnected()) this.drop('probe');
    }, readTimeoutMs);
    this.client.exists('/', () => {
      this.probeInFlight = false;
      clearTimeout(timer);
    });
  }

  private drop(what: 'handshake' | 'probe'): void {
    this.emit('unresponsive', what);
    dropSocket(this.client);
  }
}

/** node-zookeeper-client keeps its socket at `connectionManager.socket`; there is no public way to drop it. */
function dropSocket(client: zookeeper.Client): void {
  const internals = client as unknown as { connectionManager?: { socket?: { destroy(): void } } };
  internals.connectionManager?.socket?.destroy();
}

function codeOf(error: Error | zookeeper.Exception): number | undefined {
  return error instanceof zookeeper.Exception ? error.getCode() : undefined;
}

function toZkError(error: Error | zookeeper.Exception, path: string): Error {
  if (error instanceof zookeeper.Exception)
    return new ZkError(error.getCode(), `${path}: ${error.toString()}`);
  return error;
}
