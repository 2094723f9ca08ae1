// The config-directory fixture of the churn benchmarks: one ServiceEntry file per service
// (svc-N.churn.internal, port 7070 gRPC, STATIC, 10 inline endpoints), and `portolan serve` on a
// directory of them.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPortolanProcess, type PortolanProcess } from '../../test/support/portolan-process.js';

export const ENDPOINTS = 10;

export const host = (i: number): string => `svc-${i}.churn.internal`;

/** The endpoint addresses of a generation: 10.G/256.G%256.1 … .10. */
export const generationAddresses = (generation: number): string[] =>
  Array.from({ length: ENDPOINTS }, (_, e) => `10.${(generation >> 8) & 255}.${generation & 255}.${e + 1}`);

/** Service i's ServiceEntry up to its endpoints or workload selector. */
export const serviceEntryHead = (i: number): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: svc-${i} }
spec:
  hosts: [${host(i)}]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
`;

/** Service i's ServiceEntry with these endpoint addresses. */
export const serviceYaml = (i: number, addresses: readonly string[]): string =>
  `${serviceEntryHead(i)}  endpoints:\n${addresses.map((a) => `    - { address: ${a} }\n`).join('')}`;

export const serviceFile = (i: number, generation: number): string =>
  serviceYaml(i, generationAddresses(generation));

/** A DestinationRule for service i: its cluster's circuit breaker at `maxRequests`. */
export const ruleYaml = (i: number, maxRequests: number): string => `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: svc-${i} }
spec:
  host: ${host(i)}
  trafficPolicy: { connectionPool: { http: { http2MaxRequests: ${maxRequests} } } }
`;

/**
 * An AuthorizationPolicy for service i's workloads (app: svc-i): calls from one caller identity,
 * `caller`, allowed. Read wholesale (by namespace and selector): it reaches the listeners of gRPC
 * servers, which no stream of the benchmarks asks for.
 */
export const policyYaml = (i: number, caller: number): string => `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: { name: svc-${i}-callers }
spec:
  selector: { matchLabels: { app: svc-${i} } }
  rules: [{ from: [{ source: { principals: [cluster.local/ns/default/sa/caller-${caller}] } }] }]
`;

/** A new flat directory DIR with svc-0.yaml … svc-(n-1).yaml at generation 0. */
export function writeServiceDir(dir: string, services: number): void {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < services; i++) writeFileSync(join(dir, `svc-${i}.yaml`), serviceFile(i, 0));
}

export interface ConfigDirPortolan {
  readonly portolan: PortolanProcess;
  /** The watched directory (svc-N.yaml). */
  readonly configDir: string;
  /** Rewrites service i's file with these endpoint addresses. */
  rewrite(i: number, addresses: readonly string[]): void;
  /** Writes (or rewrites) rule-N.yaml, service i's DestinationRule (ruleYaml). */
  writeRule(i: number, maxRequests: number): void;
  /** Writes (or rewrites) policy-N.yaml, service i's AuthorizationPolicy (policyYaml). */
  writePolicy(i: number, caller: number): void;
  /** Stops the server and removes its directories. */
  stop(): Promise<void>;
}

/**
 * `portolan serve --config-dir D` as a child process, D a new flat directory of `services` files.
 * The load generators dial each connection from its own loopback address (100 streams each, under
 * the default per-peer limit); `streamsPerPeer` raises --max-streams-per-peer for a load that
 * shares one address. Everything else is at its default unless `args` says otherwise.
 */
export async function startConfigDirPortolan(
  services: number,
  streamsPerPeer?: number,
  args: readonly string[] = [],
  /** Where `node --cpu-prof` writes the child's V8 CPU profile; none when unset. */
  profileDir?: string,
  /** DestinationRules written before the start: rule-0.yaml … (ruleYaml, for svc-0 …). */
  rules = 0,
): Promise<ConfigDirPortolan> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-'));
  const configDir = join(dir, 'config');
  try {
    writeServiceDir(configDir, services);
    for (let i = 0; i < rules; i++)
      writeFileSync(join(configDir, `rule-${i}.yaml`), ruleYaml(i % services, 1));
    const portolan = await startPortolanProcess(
      [
        '--config-dir',
        configDir,
        '--data-dir',
        join(dir, 'data'),
        ...(streamsPerPeer === undefined ? [] : ['--max-streams-per-peer', String(streamsPerPeer)]),
        ...args,
      ],
      // PORTOLAN_BENCH_PROFILE=DIR (or profileDir): the server writes a V8 CPU profile there when it
      // stops; PORTOLAN_BENCH_NODE_ARGS: more node flags for it.
      {
        timeoutMs: 300_000,
        nodeArgs: [
          ...profileArgs(profileDir),
          ...(process.env.PORTOLAN_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
        ],
      },
    );
    return {
      portolan,
      configDir,
      rewrite: (i, addresses) => writeFileSync(join(configDir, `svc-${i}.yaml`), serviceYaml(i, addresses)),
      writeRule: (i, maxRequests) =>
        writeFileSync(join(configDir, `rule-${i}.yaml`), ruleYaml(i, maxRequests)),
      writePolicy: (i, caller) => writeFileSync(join(configDir, `policy-${i}.yaml`), policyYaml(i, caller)),
      stop: async () => {
        await portolan.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

function profileArgs(dir = process.env.PORTOLAN_BENCH_PROFILE): string[] {
  return dir ? ['--cpu-prof', '--cpu-prof-dir', dir] : [];
}

/** The server log's warnings and errors (pino levels 40 and up), counted by message, for the report. */
export function logProblems(logs: readonly Record<string, unknown>[]): string {
  const bad = logs.filter((l) => typeof l.level === 'number' && l.level >= 40);
  const errors = bad.filter((l) => (l.level as number) >= 50).length;
  // A config file's issue reads `FILE[:LINE] message`: count the message, name the first file.
  const kinds = new Map<string, { count: number; file: string }>();
  for (const l of bad) {
    const file = typeof l.file === 'string' ? l.file : '';
    const raw = String(l.msg);
    const msg = file && raw.startsWith(file) ? raw.slice(file.length).replace(/^:\d+/, '').trimStart() : raw;
    const kind = kinds.get(msg) ?? { count: 0, file };
    kind.count += 1;
    kinds.set(msg, kind);
  }
  const top = [...kinds]
    .sort((a, b) => b[1].count - a[1].count)
    .slice(0, 3)
    .map(([msg, k]) => `${k.count}× "${msg}"${k.file ? ` (first: ${k.file})` : ''}`);
  return `${bad.length - errors} warnings, ${errors} errors${top.length ? `: ${top.join(', ')}` : ''}`;
}
