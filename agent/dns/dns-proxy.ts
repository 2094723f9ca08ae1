// The agent's DNS proxy (`--dns-addr`, UDP and TCP): A and AAAA queries for mesh hostnames are
// answered from the name table the control plane sends (name-table.ts); every other query is
// forwarded as it came to the upstream resolvers, one after the other until one answers, and its
// answer returned as it came. Packets are encoded and decoded by dns-packet; one that does not
// decode is dropped and counted, without touching other queries. Bounded: forwarded queries in
// flight, TCP connections, their idle time, and each upstream's time to answer.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import dnsPacket from 'dns-packet';
import type { Logger } from '../../log/logger.js';
import type { DnsNameTable } from './name-table.js';
import type { Upstream } from './upstreams.js';

export interface DnsProxyOptions {
  readonly host: string;
  readonly port: number;
  readonly table: DnsNameTable;
  /** Where other names go (read per query: resolv.conf may change). */
  readonly upstreams: () => readonly Upstream[];
  readonly logger: Logger;
  /** TTL of the answers for mesh names (default 30 s). */
  readonly ttlSeconds?: number;
  /** How long one upstream gets to answer before the next is asked (default 2 s). */
  readonly upstreamTimeoutMs?: number;
  /** Forwarded queries in flight at once (default 1024); more are answered SERVFAIL. */
  readonly maxPending?: number;
  /** TCP connections at once (default 128), each closed after 10 s without a query. */
  readonly maxTcpConnections?: number;
}

export interface DnsStats {
  queries: number;
  /** Answered from the name table. */
  answered: number;
  forwarded: number;
  /** Upstreams did not answer (SERVFAIL sent). */
  failed: number;
  /** Did not decode as a DNS query: dropped. */
  malformed: number;
}

interface Pending {
  readonly query: Buffer;
  readonly originalId: number;
  readonly reply: (bytes: Buffer) => void;
  readonly upstreams: readonly Upstream[];
  attempt: number;
  timer: NodeJS.Timeout | undefined;
}

const RCODE_SERVFAIL = 2;
const TCP_IDLE_MS = 10_000;

export class DnsProxy {
  readonly stats: DnsStats = { queries: 0, answered: 0, forwarded: 0, failed: 0, malformed: 0 };
  private udp: Socket | undefined;
  private tcp: Server | undefined;
  private readonly forwarders = new Map<4 | 6, Socket>();
  private readonly pending = new Map<number, Pending>();
  private readonly tcpConnections = new Set<TcpSocket>();
  private nextId = Math.floor(Math.random() * 65536);
  private boundPort = 0;

  constructor(private readonly options: DnsProxyOptions) {}

  /** HOST:PORT actually bound (UDP and TCP share the port). */
  get address(): string {
    const h = this.options.host;
    return `${h.includes(':') ? `[${h}]` : h}:${this.boundPort}`;
  }

  async start(): Promise<void> {
    const family = this.options.host.includes(':') ? 'udp6' : 'udp4';
    // With port 0, TCP takes the port UDP got; another process may hold it on TCP: try again.
    for (let attempt = 0; ; attempt++) {
      const udp = createSocket(family);
      udp.on('message', (msg, rinfo) =>
        this.fromClient(msg, (bytes) => udp.send(bytes, rinfo.port, rinfo.address)),
      );
      udp.on('error', (err) => this.options.logger.warn({ err }, 'DNS proxy: UDP socket error'));
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(this.options.port, this.options.host, () => {
          udp.off('error', reject);
          resolve();
        });
      }).catch((err: Error) => {
        throw new Error(
          `cannot listen for DNS on ${this.options.host}:${this.options.port}/udp: ${err.message}`,
        );
      });
      const port = udp.address().port;
      try {
        this.tcp = await this.listenTcp(port);
        this.udp = udp;
        this.boundPort = port;
        break;
      } catch (err) {
        udp.close();
        if (this.options.port !== 0 || attempt >= 5)
          throw new Error(
            `cannot listen for DNS on ${this.options.host}:${port}/tcp: ${(err as Error).message}`,
          );
      }
    }
  }

  async stop(): Promise<void> {
    for (const p of this.pending.values()) if (p.timer) clearTimeout(p.timer);
    this.pending.clear();
    for (const c of this.tcpConnections) c.destroy();
    for (const s of this.forwarders.values()) s.close();
    this.forwarders.clear();
    this.udp?.close();
    await new Promise<void>((resolve) => (this.tcp ? this.tcp.close(() => resolve()) : resolve()));
  }

  private listenTcp(port: number): Promise<Server> {
    const server = createServer((socket) => this.tcpConnection(socket));
    server.maxConnections = this.options.maxTcpConnections ?? 128;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.options.host, () => {
        server.off('error', reject);
        resolve(server);
      });
    });
  }

  /** DNS over TCP: each message with a two-byte length in front. */
  private tcpConnection(socket: TcpSocket): void {
    this.tcpConnections.add(socket);
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('close', () => this.tcpConnections.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const message = buffered.subarray(2, 2 + length);
        buffered = buffered.subarray(2 + length);
        this.fromClient(Buffer.from(message), (bytes) => {
          if (socket.destroyed) return;
          const framed = Buffer.alloc(2 + bytes.length);
          framed.writeUInt16BE(bytes.length, 0);
          bytes.copy(framed, 2);
          socket.write(framed);
        });
      }
    });
  }

  private fromClient(message: Buffer, reply: (bytes: Buffer) => void): void {
    let packet: dnsPacket.DecodedPacket;
    try {
      packet = dnsPacket.decode(message);
    } catch {
      this.stats.malformed += 1;
      return;
    }
    const question = packet.questions?.[0];
    if (packet.type !== 'query' || !question || packet.questions?.length !== 1) {
      this.stats.malformed += 1;
      return;
    }
    this.stats.queries += 1;
    const found = this.options.table.lookup(question.name);
    if (found) {
      this.stats.answered += 1;
      const ttl = this.options.ttlSeconds ?? 30;
      const ips = question.type === 'A' ? found.v4 : question.type === 'AAAA' ? found.v6 : [];
      reply(
        dnsPacket.encode({
          type: 'response',
          id: packet.id ?? 0,
          flags:
            dnsPacket.AUTHORITATIVE_ANSWER |
            dnsPacket.RECURSION_AVAILABLE |
            (packet.flag_rd ? dnsPacket.RECURSION_DESIRED : 0),
          questions: [question],
          answers: ips.map((ip) => ({
            type: question.type === 'A' ? ('A' as const) : ('AAAA' as const),
            name: question.name,
            ttl,
            data: ip,
          })),
        }),
      );
      return;
    }
    this.forward(message, packet.id ?? 0, reply);
  }

  private forward(query: Buffer, originalId: number, reply: (bytes: Buffer) => void): void {
    const upstreams = this.options.upstreams();
    if (upstreams.length === 0 || this.pending.size >= (this.options.maxPending ?? 1024)) {
      this.stats.failed += 1;
      reply(servfail(query));
      return;
    }
    this.stats.forwarded += 1;
    let id = this.nextId;
    while (this.pending.has(id)) id = (id + 1) & 0xffff;
    this.nextId = (id + 1) & 0xffff;
    const copy = Buffer.from(query);
    copy.writeUInt16BE(id, 0);
    const p: Pending = { query: copy, originalId, reply, upstreams, attempt: 0, timer: undefined };
    this.pending.set(id, p);
    this.send(id, p);
  }

  private send(id: number, p: Pending): void {
    const upstream = p.upstreams[p.attempt];
    if (!upstream) {
      this.pending.delete(id);
      this.stats.failed += 1;
      const failed = Buffer.from(p.query);
      failed.writeUInt16BE(p.originalId, 0);
      p.reply(servfail(failed));
      return;
    }
    const socket = this.forwarder(upstream.host.includes(':') ? 6 : 4);
    socket.send(p.query, upstream.port, upstream.host);
    p.timer = setTimeout(() => {
      p.attempt += 1;
      this.send(id, p);
    }, this.options.upstreamTimeoutMs ?? 2000);
  }

  private forwarder(family: 4 | 6): Socket {
    let socket = this.forwarders.get(family);
    if (!socket) {
      const created = createSocket(family === 4 ? 'udp4' : 'udp6');
      created.on('message', (msg, rinfo) => this.fromUpstream(msg, rinfo));
      created.on('error', (err) => this.options.logger.warn({ err }, 'DNS proxy: upstream socket error'));
      this.forwarders.set(family, created);
      socket = created;
    }
    return socket;
  }

  private fromUpstream(message: Buffer, from: RemoteInfo): void {
    if (message.length < 12) return;
    const id = message.readUInt16BE(0);
    const p = this.pending.get(id);
    const asked = p?.upstreams[p.attempt];
    // Only the upstream asked may answer (an answer from anywhere else is ignored).
    if (!p || !asked || asked.port !== from.port || !sameHost(asked.host, from.address)) return;
    if (p.timer) clearTimeout(p.timer);
    this.pending.delete(id);
    const answer = Buffer.from(message);
    answer.writeUInt16BE(p.originalId, 0);
    p.reply(answer);
  }
}

function sameHost(a: string, b: string): boolean {
  return a === b || a === b.replace(/^::ffff:/, '');
}

/** SERVFAIL for `query` (its id and question kept). */
function servfail(query: Buffer): Buffer {
  try {
    const q = dnsPacket.decode(query);
    return dnsPacket.encode({
      type: 'response',
      id: q.id ?? 0,
      flags: RCODE_SERVFAIL | dnsPacket.RECURSION_AVAILABLE | (q.flag_rd ? dnsPacket.RECURSION_DESIRED : 0),
      ...(q.questions && { questions: q.questions }),
    });
  } catch {
    return Buffer.alloc(0);
  }
}
