// Shared by the two-replica e2e files (ha-postgres*.test.ts): replicas, tokens, VMs and streams on
// one real PostgreSQL per file.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, type TestContext } from 'node:test';
import { openAdsStream, type OpenAdsStream } from '../integration/ca-helpers.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

export const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
export const root = mkdtempSync(join(tmpdir(), 'portolan-ha-'));
// A live binding: importers see the server once `before` has started it.
export let postgres: PostgresServer;
let databases = 0;

/** One PostgreSQL for the test file that calls this (at its top level), stopped after its tests. */
export function usePostgres(): void {
  before(async () => {
    postgres = await startPostgres();
  });
  after(async () => {
    await postgres?.destroy();
    rmSync(root, { recursive: true, force: true });
  });
}

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function portolan(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

export async function ok(args: readonly string[]): Promise<string> {
  const run = await portolan(args);
  assert.equal(run.code, 0, `portolan ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

export type Replica = PortolanProcess & { readonly secure: string; readonly name: string };

export async function replica(
  t: TestContext,
  name: string,
  store: string,
  args: readonly string[] = [],
): Promise<Replica> {
  const p = await startPortolanProcess([
    '--registries',
    'mock',
    '--data-dir',
    join(root, `${store.split('/').pop() ?? 'db'}-${name}`),
    '--store',
    store,
    '--replica-id',
    name,
    ...args,
  ]);
  t.after(() => p.stop());
  const serving = p.logs.find((l) => l.msg === 'portolan serving');
  return Object.assign(p, { secure: String(serving?.secureXdsAddress), name });
}

export async function database(): Promise<string> {
  databases += 1;
  return postgres.createDatabase(`ha_${databases}`);
}

export async function newToken(store: string, sa: string, uses = 1): Promise<string> {
  return (
    await ok([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      sa,
      '--uses',
      String(uses),
      '--store',
      store,
    ])
  ).trim();
}

/** A VM directory with the CA's root (as `portolan ca root --store` prints it). */
export async function vmDir(store: string, name: string): Promise<string> {
  const vm = mkdtempSync(join(root, `vm-${name}-`));
  writeFileSync(join(vm, 'first-root.pem'), await ok(['ca', 'root', '--store', store]));
  return vm;
}

export function certArgs(secure: string, vm: string, extra: readonly string[] = []): string[] {
  return [
    'cert',
    '--ca-addr',
    secure,
    '--root-cert',
    join(vm, 'first-root.pem'),
    '--out',
    join(vm, 'out'),
    '--once',
    ...extra,
  ];
}

export function serialOf(vm: string): string {
  return new X509Certificate(readFileSync(join(vm, 'out', 'cert-chain.pem'))).serialNumber;
}

export function secureStream(secure: string, vm: string, sa: string): OpenAdsStream {
  const out = join(vm, 'out');
  return openAdsStream(
    secure,
    {
      rootPem: readFileSync(join(out, 'root-cert.pem'), 'utf8'),
      certChainPem: readFileSync(join(out, 'cert-chain.pem'), 'utf8'),
      keyPem: readFileSync(join(out, 'key.pem'), 'utf8'),
    },
    { id: `${sa}-vm`, metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: sa } },
  );
}

export async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  assert.equal(res.status, 200, `${url}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}
