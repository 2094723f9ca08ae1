// CA cost under a renewal flood: `portolan serve` (child process) with a passphrase-protected root
// key; W workloads enrolled with join tokens, then C concurrent loops renew with their certificates
// over persistent mTLS channels for FLOOD_MS, while /ready is polled one request at a time.
// Reports certificates issued per second, refusals by gRPC status, and /ready latency before and
// during the flood. Run against each build to compare (`npm run bench -- ca`). When the serve binary
// has `--ca-rate-limit`, a second run turns the limiter off to measure the signing cost alone.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import {
  CREATE_CERTIFICATE_PATH,
  decodeCertificateResponse,
  encodeCertificateRequest,
} from '../ca/certificate-messages.js';
import { createCsr } from '../ca/certificates.js';
import { workloadIdentity } from '../ca/identity.js';
import { createJoinToken } from '../ca/join-tokens.js';
import { generateKeyPair, privateKeyPem } from '../ca/keys.js';
import { PASSPHRASE_ENV } from '../ca/key-protection.js';
import { silentLogger } from '../log/logger.js';
import { Store } from '../store/store.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { percentile, printTable } from './table.js';

const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const run = promisify(execFile);

const WORKLOADS = Number(process.env.CA_BENCH_WORKLOADS ?? 50);
const CONCURRENCY = Number(process.env.CA_BENCH_CONCURRENCY ?? 32);
const FLOOD_MS = Number(process.env.CA_BENCH_FLOOD_MS ?? 10_000);
const READY_SAMPLES_IDLE = 50;

const bytes = (b: Buffer): Buffer => b;

interface Workload {
  readonly client: grpc.Client;
  readonly csr: string;
}

interface FloodResult {
  readonly variant: string;
  readonly issued: number;
  readonly refused: Map<string, number>;
  readonly seconds: number;
  readonly readyIdle: number[];
  readonly readyFlood: number[];
}

function call(client: grpc.Client, csr: string, metadata = new grpc.Metadata()): Promise<string[]> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      CREATE_CERTIFICATE_PATH,
      bytes,
      bytes,
      encodeCertificateRequest({ csr, validityDuration: 3600 }),
      metadata,
      { deadline: Date.now() + 30_000 },
      (err, res) =>
        err || !res ? reject(err ?? new Error('empty')) : resolve(decodeCertificateResponse(res).certChain),
    );
  });
}

async function readyLatency(httpBase: string): Promise<number> {
  const t = performance.now();
  const res = await fetch(`${httpBase}/ready`);
  await res.arrayBuffer();
  return performance.now() - t;
}

async function enroll(dataDir: string, secure: string, rootPem: string): Promise<Workload[]> {
  const store = Store.open({ dataDir, logger: silentLogger });
  const tokens: string[] = [];
  try {
    for (let i = 0; i < WORKLOADS; i++)
      tokens.push(
        createJoinToken(store.joinTokens, workloadIdentity('cluster.local', 'bench', `sa-${i}`), 3600_000)
          .token,
      );
  } finally {
    store.close();
  }
  const workloads: Workload[] = [];
  for (let i = 0; i < WORKLOADS; i++) {
    const keys = await generateKeyPair('ec-p256');
    const csr = await createCsr(keys, workloadIdentity('cluster.local', 'bench', `sa-${i}`));
    const first = new grpc.Client(secure, grpc.credentials.createSsl(Buffer.from(rootPem)));
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${tokens[i]}`);
    const chain = await call(first, csr, md);
    first.close();
    const client = new grpc.Client(
      secure,
      grpc.credentials.createSsl(
        Buffer.from(rootPem),
        Buffer.from(await privateKeyPem(keys.privateKey)),
        Buffer.from(chain[0] ?? ''),
      ),
    );
    workloads.push({ client, csr });
  }
  return workloads;
}

async function flood(variant: string, serveArgs: readonly string[]): Promise<FloodResult> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-ca-'));
  const dataDir = join(dir, 'data');
  const p = await startPortolanProcess(['--registries', 'mock', '--data-dir', dataDir, ...serveArgs]);
  const workloads: Workload[] = [];
  try {
    const serving = p.logs.find((l) => l.msg === 'portolan serving');
    const secure = typeof serving?.secureXdsAddress === 'string' ? serving.secureXdsAddress : '';
    const rootPem = (await run(process.execPath, [MAIN, 'ca', 'root', '--data-dir', dataDir])).stdout;
    workloads.push(...(await enroll(dataDir, secure, rootPem)));
    const readyIdle: number[] = [];
    for (let i = 0; i < READY_SAMPLES_IDLE; i++) readyIdle.push(await readyLatency(p.httpBase));

    let issued = 0;
    const refused = new Map<string, number>();
    const started = performance.now();
    const deadline = started + FLOOD_MS;
    const loops = Array.from({ length: CONCURRENCY }, async (_, i) => {
      let n = i;
      while (performance.now() < deadline) {
        const w = workloads[n++ % workloads.length];
        if (!w) break;
        try {
          await call(w.client, w.csr);
          issued += 1;
        } catch (err) {
          const code = grpc.status[(err as { code?: number }).code ?? grpc.status.UNKNOWN] ?? 'UNKNOWN';
          refused.set(code, (refused.get(code) ?? 0) + 1);
        }
      }
    });
    const readyFlood: number[] = [];
    const poll = (async () => {
      while (performance.now() < deadline) readyFlood.push(await readyLatency(p.httpBase));
    })();
    await Promise.all([...loops, poll]);
    const seconds = (performance.now() - started) / 1000;
    return { variant, issued, refused, seconds, readyIdle, readyFlood };
  } finally {
    for (const w of workloads) w.client.close();
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function caBench(): Promise<void> {
  const saved = process.env[PASSPHRASE_ENV];
  process.env[PASSPHRASE_ENV] = 'bench-passphrase';
  const results: FloodResult[] = [];
  try {
    const help = (await run(process.execPath, [MAIN, 'serve', '--help'])).stdout;
    results.push(await flood('defaults', []));
    if (help.includes('--ca-rate-limit'))
      results.push(await flood('--ca-rate-limit off', ['--ca-rate-limit', 'off']));
  } finally {
    if (saved === undefined) delete process.env[PASSPHRASE_ENV];
    else process.env[PASSPHRASE_ENV] = saved;
  }
  const ms = (v: number): string => v.toFixed(1);
  printTable(
    `CA renewal flood: portolan serve with ${PASSPHRASE_ENV} set, ${WORKLOADS} enrolled workloads, ${CONCURRENCY} concurrent renewals over persistent mTLS channels for ${FLOOD_MS / 1000} s (one peer, 127.0.0.1); node ${process.version}`,
    results.map((r) => {
      const idle = [...r.readyIdle].sort((a, b) => a - b);
      const busy = [...r.readyFlood].sort((a, b) => a - b);
      return {
        serve: r.variant,
        'certificates/s': (r.issued / r.seconds).toFixed(1),
        refused: [...r.refused].map(([code, n]) => `${code} ${n}`).join(', ') || '0',
        '/ready p50 idle ms': ms(percentile(idle, 50)),
        '/ready p50 / p99 flood ms': `${ms(percentile(busy, 50))} / ${ms(percentile(busy, 99))}`,
      };
    }),
  );
}
