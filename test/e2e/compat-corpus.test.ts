// End to end: the compatibility corpus (test/compat, real Istio YAML) loaded through the config
// directory of a running `portolan serve`, round by round (files defining the same resource never
// share a round). Each round: every file's verdict in /debug/configz is the one expected.json gives
// it, and what an Envoy sidecar and an Envoy ingress gateway are sent passes Envoy's validation
// rules and the consistency check. A bookinfo round is also asserted field by field.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { decodeAny } from '../../xds/proto/protos.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { checkConsistency } from '../../xds/validate/consistency.js';
import { validateEncoded } from '../../xds/validate/pgv-validator.js';
import { corpus, type CorpusFile } from '../support/compat-corpus.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess } from '../support/portolan-process.js';
import { RawAdsClient, type DecodedResponse } from '../support/raw-ads-client.js';

interface FileState {
  path: string;
  status: 'ok' | 'error';
  errors: { path: string; message: string }[];
  warnings: { path: string; message: string }[];
}

/** `Kind/namespace/name` of each resource a file defines, and the ServiceEntry hosts it claims. */
function identities(file: CorpusFile): string[] {
  const out: string[] = [];
  for (const doc of parseAllDocuments(file.text)) {
    const v = doc.toJS() as {
      kind?: string;
      metadata?: { name?: string; namespace?: string };
      spec?: { hosts?: unknown };
    } | null;
    if (v?.kind && v.metadata?.name)
      out.push(`${v.kind}/${v.metadata.namespace ?? 'default'}/${v.metadata.name}`);
    if (v?.kind === 'ServiceEntry' && Array.isArray(v.spec?.hosts))
      for (const host of v.spec.hosts as unknown[]) out.push(`host ${String(host)}`);
  }
  return out;
}

/** Greedy rounds: a file joins the first round none of whose files defines one of its resources. */
function rounds(files: readonly CorpusFile[]): CorpusFile[][] {
  const out: { files: CorpusFile[]; taken: Set<string> }[] = [];
  for (const file of files) {
    const ids = identities(file);
    let round = out.find((r) => ids.every((id) => !r.taken.has(id)));
    if (!round) out.push((round = { files: [], taken: new Set() }));
    round.files.push(file);
    for (const id of ids) round.taken.add(id);
  }
  return out.map((r) => r.files);
}

const node = (id: string, labels: Record<string, string>): object => ({
  id,
  cluster: 'compat',
  user_agent_name: 'envoy',
  metadata: {
    fields: {
      NAMESPACE: { stringValue: 'default' },
      LABELS: {
        structValue: {
          fields: Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, { stringValue: v }])),
        },
      },
    },
  },
});
const SIDECAR = node('sidecar~127.0.0.7~productpage-1~default.svc', { app: 'productpage' });
const GATEWAY = node('router~127.0.0.8~ingress-1~default.svc', { istio: 'ingressgateway' });

function encoded(res: DecodedResponse): EncodedResource[] {
  return res.resources.map((r) => {
    const d = decodeAny(r.type_url, r.value) as { name?: string; cluster_name?: string };
    return { name: d.name ?? d.cluster_name ?? '', typeUrl: r.type_url, value: r.value, version: '' };
  });
}

/** What an Envoy with `proxy` is sent (CDS, EDS, LDS, RDS, subscribed as Envoy does). */
async function envoyConfig(address: string, proxy: object): Promise<Map<string, EncodedResource[]>> {
  const client = new RawAdsClient(address);
  try {
    client.send({ node: proxy, type_url: CLUSTER, resource_names: [] });
    const cds = await client.next();
    const eds = cds.resources
      .map(
        (r) =>
          decodeAny(r.type_url, r.value) as {
            name?: string;
            type?: string;
            eds_cluster_config?: { service_name?: string };
          },
      )
      .filter((c) => c.type === 'EDS')
      .map((c) => c.eds_cluster_config?.service_name || c.name || '');
    client.ack(cds);
    const held = new Map<string, EncodedResource[]>([[CLUSTER, encoded(cds)]]);
    if (eds.length > 0) {
      client.send({ type_url: ENDPOINT, resource_names: eds });
      held.set(ENDPOINT, encoded(await client.next()));
    }
    client.send({ type_url: LISTENER, resource_names: [] });
    const lds = await client.next();
    held.set(LISTENER, encoded(lds));
    const routes = [
      ...new Set(
        [
          ...JSON.stringify(lds.resources.map((r) => decodeAny(r.type_url, r.value))).matchAll(
            /"route_config_name":"([^"]+)"/g,
          ),
        ].map((m) => m[1] ?? ''),
      ),
    ];
    if (routes.length > 0) {
      client.send({ type_url: ROUTE, resource_names: routes });
      held.set(ROUTE, encoded(await client.next()));
    }
    return held;
  } finally {
    client.close();
  }
}

function checkEnvoy(held: Map<string, EncodedResource[]>, where: string): void {
  const problems = checkConsistency(held);
  assert.deepEqual(problems, [], `${where}: consistency`);
  for (const [type, resources] of held)
    for (const r of resources)
      assert.deepEqual(
        validateEncoded(type.slice(type.lastIndexOf('/') + 1), r.value),
        [],
        `${where}: ${type} ${r.name}`,
      );
}

test('the Istio corpus loads through portolan serve with the expected verdicts, and what Envoy is sent is valid', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-compat-'));
  const config = join(dir, 'config');
  mkdirSync(config);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const portolan = await startPortolanProcess([
    '--registries',
    'config',
    '--config-dir',
    config,
    '--data-dir',
    join(dir, 'data'),
  ]);
  t.after(() => portolan.stop());
  const configz = async (): Promise<FileState[]> => {
    const res = await fetch(`${portolan.httpBase}/debug/configz`);
    return ((await res.json()) as { files: FileState[] }).files;
  };

  const all = corpus();
  const plan = rounds(all);
  assert.ok(plan.length <= 20, `${plan.length} rounds`); // bounded: each round costs a reload and two ADS fetches
  let written: string[] = [];
  let checkedBookinfo = false;
  for (const [i, round] of plan.entries()) {
    for (const path of written) rmSync(join(config, path));
    for (const file of round) {
      const target = join(config, file.path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(`${target}.tmp`, file.text); // renamed into place: never read half-written
      renameSync(`${target}.tmp`, target);
    }
    written = round.map((f) => f.path);
    // bookinfo's services are Kubernetes Services, which a config directory does not read: the
    // ServiceEntry a VM operator would write for productpage, so the gateway's routes name its
    // cluster (without it they go to BlackHoleCluster, as docs/push.md says).
    if (round.some((f) => f.path.endsWith(BOOKINFO_GATEWAY))) {
      writeFileSync(join(config, PRODUCTPAGE.path), PRODUCTPAGE.text);
      written.push(PRODUCTPAGE.path);
    }
    const want = [...written].sort();
    const files = await eventually(
      async () => {
        const state = await configz();
        const paths = state.map((f) => f.path).sort();
        // Every file of the round read, and nothing of the previous round left.
        return JSON.stringify(paths) === JSON.stringify(want) && state;
      },
      { timeoutMs: 10_000, what: `round ${i}: /debug/configz listing its ${want.length} files` },
    );
    for (const file of round) {
      const state = files.find((f) => f.path === file.path);
      const { verdict, message } = file.expected;
      assert.equal(
        state?.status,
        verdict === 'rejected' ? 'error' : 'ok',
        `${file.path}: ${JSON.stringify(state?.errors)}`,
      );
      if (verdict === 'rejected' && message)
        assert.ok(
          state?.errors.some((e) => e.message.includes(message)),
          `${file.path}: ${JSON.stringify(state?.errors)}`,
        );
      if (verdict === 'warning' && message)
        assert.ok(
          state?.warnings.some((w) => w.message.includes(message)),
          `${file.path}: ${JSON.stringify(state?.warnings)}`,
        );
      if (verdict === 'accepted') assert.deepEqual(state?.errors, [], file.path);
    }
    const sidecar = await envoyConfig(portolan.xdsAddress, SIDECAR);
    checkEnvoy(sidecar, `round ${i} sidecar`);
    const gateway = await envoyConfig(portolan.xdsAddress, GATEWAY);
    checkEnvoy(gateway, `round ${i} gateway`);
    if (round.some((f) => f.path.endsWith(BOOKINFO_GATEWAY))) {
      checkedBookinfo = true;
      assertBookinfoGateway(gateway);
    }
  }
  assert.ok(checkedBookinfo, 'bookinfo-gateway.yaml was in a round');
});

const BOOKINFO_GATEWAY = 'bookinfo/networking/bookinfo-gateway.yaml';
const PRODUCTPAGE = {
  path: 'portolan-productpage.yaml',
  text: `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: productpage, namespace: default}
spec:
  hosts: [productpage.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.9}]
`,
};

/**
 * bookinfo-gateway.yaml, field by field: the Gateway's HTTP server on 8080 is a listener whose
 * routes send /productpage, /static, /login, /logout and /api/v1/products to productpage:9080.
 */
function assertBookinfoGateway(held: Map<string, EncodedResource[]>): void {
  const listeners = (held.get(LISTENER) ?? []).map((l) => l.name);
  assert.ok(listeners.includes('0.0.0.0_8080'), `listeners ${JSON.stringify(listeners)}`);
  const routes = (held.get(ROUTE) ?? []).map(
    (r) =>
      decodeAny(r.typeUrl, r.value) as {
        name: string;
        virtual_hosts: {
          domains: string[];
          routes: { match: { prefix?: string; path?: string }; route?: { cluster?: string } }[];
        }[];
      },
  );
  const http = routes.find((r) => r.name === 'http.8080') ?? assert.fail('route http.8080');
  const vhost = http.virtual_hosts.find((v) => v.domains.includes('*')) ?? assert.fail('virtual host *');
  assert.deepEqual(
    vhost.routes.map((r) => [r.match.path ?? r.match.prefix, r.route?.cluster]),
    [
      ['/productpage', 'outbound|9080||productpage.default.svc.cluster.local'],
      ['/static', 'outbound|9080||productpage.default.svc.cluster.local'],
      ['/login', 'outbound|9080||productpage.default.svc.cluster.local'],
      ['/logout', 'outbound|9080||productpage.default.svc.cluster.local'],
      ['/api/v1/products', 'outbound|9080||productpage.default.svc.cluster.local'],
    ],
  );
}
