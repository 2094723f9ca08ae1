// DNS for tests: a query over UDP or TCP (dns-packet both ways, each wait bounded), and a stand-in
// upstream resolver on loopback that answers every A query with one address and counts queries.
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import dnsPacket from 'dns-packet';

export function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) };
}

/** One query to `address` (HOST:PORT); rejects after `timeoutMs` without an answer. */
export async function queryDns(
  address: string,
  name: string,
  type: 'A' | 'AAAA' | 'MX' = 'A',
  { transport = 'udp', timeoutMs = 3000 }: { transport?: 'udp' | 'tcp'; timeoutMs?: number } = {},
): Promise<dnsPacket.DecodedPacket> {
  const { host, port } = splitAddress(address);
  const id = Math.floor(Math.random() * 65536);
  const query = dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no DNS answer from ${address} for ${name} ${type} within ${timeoutMs} ms`));
    }, timeoutMs);
    let cleanup = (): void => undefined;
    if (transport === 'udp') {
      const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
      cleanup = () => {
        clearTimeout(timer);
        socket.close();
      };
      socket.on('message', (msg) => {
        const answer = dnsPacket.decode(msg);
        if (answer.id !== id) return;
        cleanup();
        resolve(answer);
      });
      socket.send(query, port, host);
    } else {
      const socket = connect({ host, port });
      cleanup = () => {
        clearTimeout(timer);
        socket.destroy();
      };
      let buffered = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        if (buffered.length < 2 || buffered.length < 2 + buffered.readUInt16BE(0)) return;
        cleanup();
        resolve(dnsPacket.decode(buffered.subarray(2, 2 + buffered.readUInt16BE(0))));
      });
      socket.on('error', (err) => {
        cleanup();
        reject(err);
      });
      const framed = Buffer.alloc(2 + query.length);
      framed.writeUInt16BE(query.length, 0);
      query.copy(framed, 2);
      socket.write(framed);
    }
  });
}

/** The addresses of the A or AAAA answers. */
export function answerData(packet: dnsPacket.DecodedPacket): string[] {
  return (packet.answers ?? []).flatMap((a) => (a.type === 'A' || a.type === 'AAAA' ? [String(a.data)] : []));
}

export interface TestResolver {
  readonly address: string;
  /** Names asked, in order. */
  readonly asked: string[];
  stop(): Promise<void>;
}

/** A resolver on 127.0.0.1 answering every A query with `answer` (TTL 60). */
export async function startTestResolver(answer: string): Promise<TestResolver> {
  const socket = createSocket('udp4');
  const asked: string[] = [];
  socket.on('message', (msg, rinfo) => {
    let q: dnsPacket.DecodedPacket;
    try {
      q = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const question = q.questions?.[0];
    if (!question) return;
    asked.push(question.name);
    const reply = dnsPacket.encode({
      type: 'response',
      id: q.id ?? 0,
      flags: dnsPacket.RECURSION_AVAILABLE | dnsPacket.RECURSION_DESIRED,
      questions: [question],
      answers: question.type === 'A' ? [{ type: 'A', name: question.name, ttl: 60, data: answer }] : [],
    });
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    asked,
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
