// A load-generator process (forked by bench/push-scale.ts, bench/proxyless-storm.ts and
// bench/churn-streams.ts): opens simulated proxy streams against an ADS server, many per HTTP/2
// connection or one each, and answers the parent's questions over IPC.
import * as grpc from '@grpc/grpc-js';
import { SimStream, type StreamSpec } from './sim-stream.js';
import { dialFrom, loopbackSource } from './source-address.js';

export type ToGenerator =
  | {
      readonly cmd: 'open';
      readonly address: string;
      readonly streams: readonly StreamSpec[];
      /** Streams sharing one connection (1: a connection per stream). */
      readonly perConnection: number;
      readonly clusters: readonly string[];
      /** Keep the first response of each (type, name) seen, for `captured`. */
      readonly capture?: boolean;
      /**
       * Dial each connection from its own loopback address, the first this one's
       * (load/source-address.ts: loopbackSource); unset: every connection from 127.0.0.1.
       */
      readonly firstSource?: number;
    }
  | { readonly cmd: 'status' }
  | { readonly cmd: 'marks'; readonly changes: number }
  | { readonly cmd: 'arrivals' }
  | { readonly cmd: 'captured' }
  /** How many streams received a CDS response after `since` (wall ms), and when the last of them did. */
  | { readonly cmd: 'clustersSince'; readonly since: number }
  /** Close every stream and connection, and stay up for the next `open`. */
  | { readonly cmd: 'reset' }
  | { readonly cmd: 'close' };

export interface GeneratorStatus {
  readonly ev: 'status';
  readonly open: number;
  readonly configured: number;
  readonly errors: number;
  readonly lastConfiguredAt: number;
  readonly firstError?: string;
  readonly responses: number;
  readonly bytes: number;
}

/** Per change seq: across this process's recording streams, the earliest and latest first arrival. */
export interface GeneratorMarks {
  readonly ev: 'marks';
  readonly first: number[];
  readonly last: number[];
  /** How many recording streams received each change. */
  readonly reached: number[];
  readonly recording: number;
}

/** Each recording stream's watched host and its [change seq, arrival time] marks. */
export interface GeneratorArrivals {
  readonly ev: 'arrivals';
  readonly streams: { readonly host: string; readonly marks: [number, number][] }[];
}

export interface GeneratorClusters {
  readonly ev: 'clusters';
  readonly reached: number;
  readonly open: number;
  readonly last: number;
}

/** The first response of each (type, name) the streams received, base64, keyed `${typeUrl} ${name}`. */
export interface GeneratorCaptured {
  readonly ev: 'captured';
  readonly responses: Record<string, string>;
}

const streams: SimStream[] = [];
const clients: grpc.Client[] = [];
const specs: StreamSpec[] = [];
const captured = new Map<string, Buffer>();

function reply(
  message:
    | GeneratorStatus
    | GeneratorMarks
    | GeneratorArrivals
    | GeneratorCaptured
    | GeneratorClusters
    | { ev: 'opened' }
    | { ev: 'reset' }
    | { ev: 'closed' },
): void {
  process.send?.(message);
}

function capture(typeUrl: string, name: string, bytes: Buffer): void {
  const key = `${typeUrl} ${name}`;
  if (!captured.has(key)) captured.set(key, bytes);
}

function open(msg: Extract<ToGenerator, { cmd: 'open' }>): void {
  let client: grpc.Client | undefined;
  let connections = 0;
  msg.streams.forEach((spec, i) => {
    if (!client || i % msg.perConnection === 0) {
      const target =
        msg.firstSource === undefined
          ? msg.address
          : dialFrom(msg.address, loopbackSource(msg.firstSource + connections));
      connections += 1;
      // A private subchannel pool: grpc-js would otherwise share one connection between clients.
      client = new grpc.Client(target, grpc.credentials.createInsecure(), {
        'grpc.use_local_subchannel_pool': 1,
        'grpc.max_receive_message_length': 64 * 1024 * 1024,
      });
      clients.push(client);
    }
    streams.push(new SimStream(client, spec, msg.clusters, msg.capture ? capture : undefined));
    specs.push(spec);
  });
  reply({ ev: 'opened' });
}

function status(): GeneratorStatus {
  let configured = 0;
  let errors = 0;
  let last = 0;
  let responses = 0;
  let bytes = 0;
  let firstError: string | undefined;
  for (const s of streams) {
    if (s.configuredAt !== undefined) {
      configured += 1;
      last = Math.max(last, s.configuredAt);
    }
    if (s.error) {
      errors += 1;
      firstError ??= s.error;
    }
    responses += s.responses;
    bytes += s.bytes;
  }
  return {
    ev: 'status',
    open: streams.length,
    configured,
    errors,
    lastConfiguredAt: last,
    ...(firstError && { firstError }),
    responses,
    bytes,
  };
}

// A stream has change c once it received any marker >= c (pushes merge changes; the latest wins).
function marks(changes: number): GeneratorMarks {
  const first = new Array<number>(changes + 1).fill(Infinity);
  const last = new Array<number>(changes + 1).fill(0);
  const reached = new Array<number>(changes + 1).fill(0);
  let recording = 0;
  streams.forEach((s, i) => {
    if (!specs[i]?.record) return;
    recording += 1;
    let c = 1;
    for (const [seq, at] of s.marks) {
      for (; c <= Math.min(seq, changes); c++) {
        first[c] = Math.min(first[c] ?? Infinity, at);
        last[c] = Math.max(last[c] ?? 0, at);
        reached[c] = (reached[c] ?? 0) + 1;
      }
    }
  });
  return { ev: 'marks', first, last, reached, recording };
}

function arrivals(): GeneratorArrivals {
  const out: GeneratorArrivals['streams'] = [];
  streams.forEach((s, i) => {
    const spec = specs[i];
    if (spec?.record) out.push({ host: spec.host, marks: s.marks });
  });
  return { ev: 'arrivals', streams: out };
}

function closeAll(): void {
  for (const s of streams) s.close();
  for (const c of clients) c.close();
  streams.length = 0;
  clients.length = 0;
  specs.length = 0;
}

process.on('message', (msg: ToGenerator) => {
  if (msg.cmd === 'open') open(msg);
  else if (msg.cmd === 'status') reply(status());
  else if (msg.cmd === 'marks') reply(marks(msg.changes));
  else if (msg.cmd === 'arrivals') reply(arrivals());
  else if (msg.cmd === 'clustersSince') {
    const after = streams.filter((s) => s.lastClusterAt > msg.since);
    reply({
      ev: 'clusters',
      reached: after.length,
      open: streams.length,
      last: after.reduce((m, s) => Math.max(m, s.lastClusterAt), 0),
    });
  } else if (msg.cmd === 'captured')
    reply({
      ev: 'captured',
      responses: Object.fromEntries([...captured].map(([k, b]) => [k, b.toString('base64')])),
    });
  else if (msg.cmd === 'reset') {
    closeAll();
    reply({ ev: 'reset' });
  } else if (msg.cmd === 'close') {
    closeAll();
    reply({ ev: 'closed' });
    setTimeout(() => process.exit(0), 200);
  }
});

process.on('disconnect', () => process.exit(0));
