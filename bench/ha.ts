// Several replicas on one PostgreSQL (`npm run bench -- ha`): enrollment throughput through one
// replica and through two (each enrollment a join token spent atomically in PostgreSQL, an
// enrollment row, a signature and an issuance-log row), and failover time — a replica killed -9 →
// a grpc-js-xds client whose bootstrap names both replicas calls the backend the survivor routes it
// to. A real PostgreSQL (Debian `postgresql`, test/support/postgres.ts), `portolan serve` children.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import {
  CREATE_CERTIFICATE_PATH,
  decodeCertificateResponse,
  encodeCertificateRequest,
} from '../ca/certificate-messages.js';
import { createCsr } from '../ca/certificates.js';
import { workloadIdentity } from '../ca/identity.js';
import { createSharedJoinToken } from '../ca/join-tokens.js';
import { generateKeyPair } from '../ca/keys.js';
import { PostgresStore } from '../store/postgres/postgres-store.js';
import { callEcho, startEchoBackend } from '../test/support/echo-backend.js';
import { startPortolanProcess, type PortolanProcess } from '../test/support/portolan-process.js';
import { startPostgres, type PostgresServer } from '../test/support/postgres.js';
import { xdsEchoClient } from '../test/support/xds-client.js';
import { percentile, printTable } from './table.js';

const ENROLLMENTS = Number(process.env.HA_BENCH_ENROLLMENTS ?? 200);
const CONCURRENCY = Number(process.env.HA_BENCH_CONCURRENCY ?? 16);
const FAILOVERS = Number(process.env.HA_BENCH_FAILOVERS ?? 3);

const bytes = (b: Buffer): Buffer => b;

function enroll(client: grpc.Client, csr: string, token: string): Promise<void> {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(
      CREATE_CERTIFICATE_PATH,
      bytes,
      bytes,
      encodeCertificateRequest({ csr, validityDuration: 3600 }),
      md,
      { deadline: Date.now() + 30_000 },
      (err, res) =>
        err || !res ? reject(err ?? new Error('empty')) : resolve(void decodeCertificateResponse(res)),
    ),
  );
}

async function replicas(
  pg: PostgresServer,
  db: string,
  n: number,
  dir: string,
  extra: string[] = [],
  create = true,
  prefix = 'r',
): Promise<PortolanProcess[]> {
  const url = create ? await pg.createDatabase(db) : `postgres://postgres@127.0.0.1:${pg.port}/${db}`;
  const started: PortolanProcess[] = [];
  for (let i = 0; i < n; i++)
    started.push(
      await startPortolanProcess([
        '--data-dir',
        join(dir, `${db}-${prefix}${i}`),
        '--store',
        url,
        '--replica-id',
        `${prefix}${i}`,
        '--ca-rate-limit',
        'off',
        ...(extra.length ? extra : ['--registries', 'mock']),
      ]),
    );
  return started;
}

async function throughput(
  pg: PostgresServer,
  dir: string,
  n: number,
): Promise<{ perSecond: number; failed: number }> {
  const db = `bench_enroll_${n}`;
  const url = `postgres://postgres@127.0.0.1:${pg.port}/${db}`;
  const procs = await replicas(pg, db, n, dir, []);
  const store = await PostgresStore.open({ url, replica: 'bench' });
  const clients: grpc.Client[] = [];
  try {
    const root = (await store.getMaterial('roots'))?.toString('utf8') ?? '[]';
    const rootPem = (JSON.parse(root) as { certPem: string }[]).map((r) => r.certPem).join('\n');
    for (const p of procs) {
      const serving = p.logs.find((l) => l.msg === 'portolan serving');
      clients.push(
        new grpc.Client(String(serving?.secureXdsAddress), grpc.credentials.createSsl(Buffer.from(rootPem))),
      );
    }
    // Tokens and CSRs first: only the enrollments are timed.
    const work: { token: string; csr: string }[] = [];
    const keys = await generateKeyPair('ec-p256');
    for (let i = 0; i < ENROLLMENTS; i++) {
      const identity = workloadIdentity('cluster.local', 'bench', `sa-${i}`);
      const { token } = await createSharedJoinToken(store, identity, 3600_000);
      work.push({ token, csr: await createCsr(keys, identity) });
    }
    let next = 0;
    let failed = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < work.length; i = next++) {
          const w = work[i];
          const client = clients[i % clients.length];
          if (!w || !client) break;
          await enroll(client, w.csr, w.token).catch(() => (failed += 1));
        }
      }),
    );
    return { perSecond: (ENROLLMENTS - failed) / ((performance.now() - started) / 1000), failed };
  } finally {
    for (const c of clients) c.close();
    await store.close();
    for (const p of procs) await p.stop();
  }
}

async function failover(pg: PostgresServer, dir: string, run: number): Promise<number> {
  const b1 = await startEchoBackend('b1', '127.0.0.1');
  const b2 = await startEchoBackend('b2', '127.0.0.2', b1.port);
  const host = 'echo.ha-bench.internal';
  const config = (address: string, port: number): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${host}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: ${address}, ports: { grpc: ${port} } }]
`;
  // A's copy of the directory routes to b1, B's to b2: the first b2 answer after A is killed is B's routing.
  const dirs = [b1, b2].map((backend, i) => {
    const d = join(dir, `failover-${run}-${i}`);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'echo.yaml'), config(backend.address, backend.port));
    return d;
  });
  const a2 = (
    await replicas(pg, `bench_failover_${run}`, 1, dir, [
      '--registries',
      'config',
      '--config-dir',
      dirs[0] ?? '',
    ])
  )[0];
  const b = (
    await replicas(
      pg,
      `bench_failover_${run}`,
      1,
      dir,
      ['--registries', 'config', '--config-dir', dirs[1] ?? ''],
      false,
      'b',
    )
  )[0];
  if (!a2 || !b) throw new Error('two replicas');
  const client = xdsEchoClient(
    `xds:///${host}:50051`,
    `ipv4:${a2.xdsAddress},${b.xdsAddress}`,
    `bench-${run}`,
  );
  try {
    for (let i = 0; i < 300 && (await callEcho(client, 3000).catch(() => '')) !== 'b1'; i++) await sleep(50);
    const killed = performance.now();
    process.kill(a2.pid, 'SIGKILL');
    for (let i = 0; i < 1500; i++) {
      if ((await callEcho(client, 3000).catch(() => '')) === 'b2') return performance.now() - killed;
      await sleep(10);
    }
    return NaN;
  } finally {
    client.close();
    await a2.stop();
    await b.stop();
    await b1.stop();
    await b2.stop();
  }
}

export async function haBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-ha-'));
  const pg = await startPostgres();
  try {
    const one = await throughput(pg, dir, 1);
    const two = await throughput(pg, dir, 2);
    printTable(
      `Enrollment throughput on PostgreSQL: ${ENROLLMENTS} join-token enrollments, ${CONCURRENCY} concurrent, --ca-rate-limit off, PostgreSQL and the replicas on one host; node ${process.version}`,
      [
        { replicas: '1', 'enrollments/s': one.perSecond.toFixed(1), failed: String(one.failed) },
        { replicas: '2', 'enrollments/s': two.perSecond.toFixed(1), failed: String(two.failed) },
      ],
    );
    const times: number[] = [];
    for (let run = 0; run < FAILOVERS; run++) times.push(await failover(pg, dir, run));
    const sorted = times.filter((t) => !Number.isNaN(t)).sort((x, y) => x - y);
    printTable(
      `Failover: replica killed -9 → grpc-js-xds client routed by the other replica (${FAILOVERS} runs)`,
      [
        {
          runs: times.map((t) => t.toFixed(0)).join(', '),
          'p50 ms': percentile(sorted, 50).toFixed(0),
          'max ms': (sorted.at(-1) ?? NaN).toFixed(0),
        },
      ],
    );
  } finally {
    await pg.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}
