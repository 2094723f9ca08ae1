// What AuthorizationPolicies cost the control plane: loading and validating N policy documents
// (one file), and generating the full Envoy resource set of one sidecar they all select (every
// policy: 3 rules of principals, paths and a header condition) and a gRPC server's listener. In
// process, no client: the generators as the ADS server runs them, each set built from a fresh
// generation (no memo shared between rounds). Resource sizes are the encoded LDS bytes.
import { performance } from 'node:perf_hooks';
import { loadConfigFile } from '../config-dir/load-file.js';
import { mergeFiles } from '../config-dir/merge.js';
import type { MeshConfig } from '../mesh/mesh-config.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../xds/generators/index.js';
import { grpcListenerGenerator } from '../xds/generators/grpc/listener.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../xds/generators/grpc/server-listener.js';
import { generateContext } from '../xds/generators/serving-view.js';
import { LISTENER } from '../xds/proto/type-urls.js';
import { proxyFromNode } from '../xds/proxy/proxy.js';
import { envoyResourceSet } from '../xds/validate/envoy-resource-set.js';
import { authzFixtureCatalog, authzFixtureConfig, PAYMENTS_IP } from '../test/support/authz-fixture-mesh.js';
import { printTable, summarize } from './table.js';

const SIZES = [10, 100, 1000];
const ROUNDS = 10;

function policies(n: number): string {
  const docs: string[] = [];
  for (let i = 0; i < n; i++)
    docs.push(`apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: p${i}, namespace: shop}
spec:
  selector: {matchLabels: {app: payments}}
  action: ${i % 10 === 0 ? 'DENY' : 'ALLOW'}
  rules:
    - from: [{source: {principals: [cluster.local/ns/shop/sa/caller-${i}]}}]
      to: [{operation: {paths: [/shop.Payments/Method${i}, /shop.Admin/*]}}]
    - from: [{source: {namespaces: [team-${i}], notPrincipals: ["*/sa/blocked"]}}]
      when: [{key: "request.headers[x-tenant]", values: [t${i}]}]
    - to: [{operation: {ports: ["7070"], notPaths: [/shop.Payments/Refund]}}]
`);
  return docs.join('---\n');
}

const table = new GeneratorTable(DEFAULT_GENERATORS, false);
const catalog = authzFixtureCatalog();
let generation = 1_000;

const sidecar = proxyFromNode({
  id: `sidecar~${PAYMENTS_IP}~payments-1~shop.svc`,
  user_agent_name: 'envoy',
  metadata: { NAMESPACE: 'shop', LABELS: { app: 'payments' }, INTERCEPTION_MODE: 'REDIRECT' },
});
const grpcServer = proxyFromNode({
  id: 'payments-server-1',
  user_agent_name: 'gRPC Node Pure JS',
  metadata: { NAMESPACE: 'shop', LABELS: { app: 'payments' } },
});
const SERVER_LISTENER = GRPC_SERVER_LISTENER_TEMPLATE.replace('%s', `${PAYMENTS_IP}:7070`);

function timed<T>(run: () => T): [T, number] {
  const start = performance.now();
  const out = run();
  return [out, performance.now() - start];
}

export async function authzBench(): Promise<void> {
  const rows: Record<string, string>[] = [];
  for (const n of SIZES) {
    const text = policies(n);
    const load: number[] = [];
    const envoy: number[] = [];
    const grpc: number[] = [];
    let ldsBytes = 0;
    let grpcBytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const [loaded, loadMs] = timed(() => loadConfigFile('authz.yaml', text));
      if (loaded.errors.length > 0) throw new Error(`policies do not load: ${loaded.errors[0]?.message}`);
      load.push(loadMs);
      const merged = mergeFiles([loaded]);
      const config: MeshConfig = {
        ...authzFixtureConfig(++generation, []),
        authorizationPolicies: merged.authorizationPolicies,
      };
      const [set, envoyMs] = timed(() =>
        envoyResourceSet(table, generateContext({ proxy: sidecar, catalog, config })),
      );
      envoy.push(envoyMs);
      ldsBytes = (set.get(LISTENER) ?? []).reduce((sum, r) => sum + r.value.length, 0);
      const [listener, grpcMs] = timed(() =>
        grpcListenerGenerator.build(generateContext({ proxy: grpcServer, catalog, config }), SERVER_LISTENER),
      );
      grpc.push(grpcMs);
      grpcBytes = listener?.value.length ?? 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
    rows.push({
      policies: String(n),
      'load+validate p50 ms': summarize(load).p50 ?? '',
      'envoy set p50 ms': summarize(envoy).p50 ?? '',
      'envoy LDS KiB': (ldsBytes / 1024).toFixed(1),
      'grpc listener p50 ms': summarize(grpc).p50 ?? '',
      'grpc listener KiB': (grpcBytes / 1024).toFixed(1),
    });
  }
  printTable(
    `AuthorizationPolicy cost: N policies (3 rules each) selecting one workload, ${ROUNDS} rounds`,
    rows,
  );
}
