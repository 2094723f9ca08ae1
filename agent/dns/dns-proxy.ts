// The agent's DNS proxy (`--dns-addr`, UDP and TCP): A and AAAA queries for mesh hostnames are
// answered from the name table the control plane sends (name-table.ts); every other query is
// forwarded to the upstream resolvers, one after the other until one answers, and its answer
// returned with the client's id. Each upstream query goes out with a random id from a socket of its
// own (a fresh random source port), and an answer is taken only from the resolver asked, on that
// socket, with that id and the question asked: a spoofer must guess 32 bits, not read them off. Packets are encoded and decoded by dns-packet; one that does not
// decode is dropped and counted, without touching other queries. Bounded: forwarded queries in
// flight, TCP connections, their idle time, and each upstream's time to answer.
import { randomInt } from 'node:crypto';
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
  /** The client's query as it came (its id is the client's). */
  readonly query: Buffer;
  readonly question: dnsPacket.Question;
  readonly reply: (bytes: Buffer) => void;
  readonly upstreams: readonly Upstream[];
  attempt: number;
  timer: NodeJS.Timeout | undefined;
  /** The socket of the current attempt, and the id it asked with. */
  socket: Socket | undefined;
  id: number;
}

const RCODE_SERVFAIL = 2;
const TCP_IDLE_MS = 10_000;

export class DnsProxy {
  readonly stats: DnsStats = { queries: 0, answered: 0, forwarded: 0, failed: 0, malformed: 0 };
  private udp: Socket | undefined;
  private tcp: Server | undefined;
  private readonly pending = new Set<Pending>();
  private readonly tcpConnections = new Set<TcpSocket>();
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
    for (const p of this.pending) this.release(p);
    this.pending.clear();
    for (const c of this.tcpConnections) c.destroy();
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
    this.forward(message, question, reply);
  }

  private forward(query: Buffer, question: dnsPacket.Question, reply: (bytes: Buffer) => void): void {
    const upstreams = this.options.upstreams();
    if (upstreams.length === 0 || this.pending.size >= (this.options.maxPending ?? 1024)) {
      this.stats.failed += 1;
      reply(servfail(query));
      return;
    }
    this.stats.forwarded += 1;
    const p: Pending = {
      query: Buffer.from(query),
      question,
      reply,
      upstreams,
      attempt: 0,
      timer: undefined,
      socket: undefined,
      id: 0,
    };
    this.pending.add(p);
    this.send(p);
  }

  /** Asks the attempt's upstream: a new socket (the OS picks a random port), a random id. */
  private send(p: Pending): void {
    this.release(p);
    const upstream = p.upstreams[p.attempt];
    if (!upstream) {
      this.pending.delete(p);
      this.stats.failed += 1;
      p.reply(servfail(p.query));
      return;
    }
    const socket = createSocket(upstream.host.includes(':') ? 'udp6' : 'udp4');
    p.socket = socket;
    p.id = randomInt(0x10000);
    const copy = Buffer.from(p.query);
    copy.writeUInt16BE(p.id, 0);
    socket.on('message', (msg, rinfo) => this.fromUpstream(p, socket, upstream, msg, rinfo));
    socket.on('error', (err) => this.options.logger.debug({ err }, 'DNS proxy: upstream socket error'));
    socket.send(copy, upstream.port, upstream.host);
    p.timer = setTimeout(() => {
      p.attempt += 1;
      this.send(p);
    }, this.options.upstreamTimeoutMs ?? 2000);
  }

  private fromUpstream(p: Pending, socket: Socket, asked: Upstream, message: Buffer, from: RemoteInfo): void {
    // Only the upstream asked, on the socket asked, with the id asked, about the question asked.
    if (p.socket !== socket || message.length < 12 || message.readUInt16BE(0) !== p.id) return;
    if (asked.port !== from.port || !sameHost(asked.host, from.address)) return;
    if (!sameQuestion(message, p.question)) return;
    this.release(p);
    this.pending.delete(p);
    const answer = Buffer.from(message);
    p.query.copy(answer, 0, 0, 2); // the client's id
    p.reply(answer);
  }

  private release(p: Pending): void {
    if (p.timer) clearTimeout(p.timer);
    p.timer = undefined;
    p.socket?.close();
    p.socket = undefined;
  }
}

/** Whether `message` is a response with exactly the one question `q` (names compared as DNS does). */
function sameQuestion(message: Buffer, q: dnsPacket.Question): boolean {
  let answer: dnsPacket.DecodedPacket;
  try {
    answer = dnsPacket.decode(message);
  } catch {
    return false;
  }
  const [a] = answer.questions ?? [];
  return (
    answer.type === 'response' &&
    answer.questions?.length === 1 &&
    a !== undefined &&
    a.type === q.type &&
    (a.class ?? 'IN') === (q.class ?? 'IN') &&
    a.name.toLowerCase().replace(/\.$/, '') === q.name.toLowerCase().replace(/\.$/, '')
  );
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
