// The mesh the authorization cookbook (docs/authorization.md) is written for, and the golden files
// show its examples on: namespace shop with payments (gRPC), ledger (gRPC and a TCP port) and catalog
// (HTTP) workloads on their own VMs, an ingress gateway routing shop.example.com to catalog, workload
// mTLS STRICT in shop — and every file of examples/authorization/ loaded through the config loader.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatIssue, loadConfigFile, type FileLoad } from '../../config-dir/load-file.js';
import { mergeFiles } from '../../config-dir/merge.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type {
  GatewayResource,
  PeerAuthenticationResource,
  VirtualServiceResource,
} from '../../mesh/types.js';
import { buildCatalog, type Catalog } from '../../model/catalog.js';
import { endpoint, service, servicePort } from './model-fixtures.js';

export const PAYMENTS = 'payments.shop.internal';
export const LEDGER = 'ledger.shop.internal';
export const CATALOG = 'catalog.shop.internal';
export const PAYMENTS_IP = '10.1.0.1';
export const LEDGER_IP = '10.1.0.2';
export const CATALOG_IP = '10.1.0.3';
export const INGRESS_LABELS = { istio: 'ingressgateway' };

function repoRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'examples', 'authorization'))) return dir;
  return resolve('.');
}

export const AUTHZ_EXAMPLES_DIR = join(repoRoot(), 'examples', 'authorization');

/** The example files, by name, in path order. */
export function authzExampleFiles(): string[] {
  return readdirSync(AUTHZ_EXAMPLES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
}

export function readAuthzExample(file: string): string {
  return readFileSync(join(AUTHZ_EXAMPLES_DIR, file), 'utf8');
}

/** Loads one example as the config directory would; throws with the issues if it does not load cleanly. */
export function loadAuthzExample(file: string): FileLoad {
  const load = loadConfigFile(file, readAuthzExample(file));
  const issues = [...load.errors, ...load.warnings].map((i) => formatIssue(file, i));
  if (issues.length > 0) throw new Error(`${file} does not load cleanly:\n${issues.join('\n')}`);
  return load;
}

export function authzFixtureCatalog(): Catalog {
  return buildCatalog(
    [
      service(PAYMENTS, [servicePort('grpc', 7070)], { namespace: 'shop' }),
      service(LEDGER, [servicePort('grpc', 7070), servicePort('pg', 5432, 'TCP')], { namespace: 'shop' }),
      service(CATALOG, [servicePort('http', 8080, 'HTTP')], { namespace: 'shop' }),
    ],
    new Map([
      [
        PAYMENTS,
        [endpoint(PAYMENTS_IP, { grpc: 7070 }, { labels: { app: 'payments' }, serviceAccount: 'payments' })],
      ],
      [
        LEDGER,
        [
          endpoint(
            LEDGER_IP,
            { grpc: 7070, pg: 5432 },
            { labels: { app: 'ledger' }, serviceAccount: 'ledger' },
          ),
        ],
      ],
      [
        CATALOG,
        [endpoint(CATALOG_IP, { http: 8080 }, { labels: { app: 'catalog' }, serviceAccount: 'catalog' })],
      ],
    ]),
  );
}

function resource<K extends 'Gateway' | 'VirtualService' | 'PeerAuthentication', T>(
  kind: K,
  namespace: string,
  name: string,
  spec: T,
) {
  return {
    kind,
    apiVersion: kind === 'PeerAuthentication' ? 'security.istio.io/v1' : 'networking.istio.io/v1',
    name,
    namespace,
    labels: {},
    annotations: {},
    spec,
    file: 'authz-fixture.yaml',
    line: 1,
  };
}

/** The examples (all of them, or `files`) with the fixture's Gateway, VirtualService and mTLS. */
export function authzFixtureConfig(
  generation: number,
  files: readonly string[] = authzExampleFiles(),
): MeshConfig {
  const merged = mergeFiles(files.map(loadAuthzExample));
  const gateway: GatewayResource = resource('Gateway', 'istio-system', 'ingress', {
    selector: INGRESS_LABELS,
    servers: [
      { port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['shop.example.com'] },
      { port: { number: 5432, name: 'pg', protocol: 'TCP' }, hosts: ['*'] },
    ],
  });
  const routes: VirtualServiceResource[] = [
    resource('VirtualService', 'istio-system', 'shop', {
      hosts: ['shop.example.com'],
      gateways: ['ingress'],
      http: [{ route: [{ destination: { host: CATALOG, port: { number: 8080 } } }] }],
    }),
    resource('VirtualService', 'istio-system', 'ledger-db', {
      hosts: ['*'],
      gateways: ['ingress'],
      tcp: [{ route: [{ destination: { host: LEDGER, port: { number: 5432 } } }] }],
    }),
  ];
  const strict: PeerAuthenticationResource = resource('PeerAuthentication', 'shop', 'default', {
    mtls: { mode: 'STRICT' },
  });
  return {
    generation,
    virtualServices: routes,
    destinationRules: [],
    gateways: [gateway],
    sidecars: [],
    peerAuthentications: [strict],
    authorizationPolicies: merged.authorizationPolicies,
    requestAuthentications: merged.requestAuthentications,
  };
}
