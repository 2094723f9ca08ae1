// An Envoy gateway (`router` node) on the ADS wire, configured from a watched directory: its
// listeners come from the Gateway whose selector matches the node's LABELS, its routes from the
// VirtualServices bound to that Gateway; editing the VirtualService re-routes live, a broken Gateway
// file keeps its last good version, and deleting it withdraws the listener.
import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeAny } from '../../xds/proto/protos.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { checkConsistency } from '../../xds/validate/consistency.js';
import { validateEncoded } from '../../xds/validate/pgv-validator.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';
import { RawAdsClient, resourceNames, type DecodedResponse } from '../support/raw-ads-client.js';

const SERVICES = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: shop, namespace: default}
spec:
  hosts: [shop.mesh.internal]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.5}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: default}
spec:
  hosts: [echo.mesh.internal]
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  resolution: STATIC
  endpoints: [{address: 127.0.0.6}]
`;

const GATEWAY = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: ingress, namespace: default}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: [shop.example.com]
`;

const virtualService = (echoPrefix: string): string => `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: default}
spec:
  hosts: [shop.example.com]
  gateways: [ingress]
  http:
  - match: [{uri: {prefix: ${echoPrefix}}}]
    route: [{destination: {host: echo.mesh.internal}}]
  - route: [{destination: {host: shop.mesh.internal, port: {number: 8080}}}]
`;

const ROUTER_NODE = {
  id: 'router~127.0.0.9~ingress-1~default.svc',
  cluster: 'ingress',
  user_agent_name: 'envoy',
  metadata: {
    fields: {
      LABELS: { structValue: { fields: { istio: { stringValue: 'ingressgateway' } } } },
    },
  },
};

interface DecodedRoute {
  match: { prefix?: string; path?: string };
  route?: { cluster?: string };
}
interface DecodedRouteConfig {
  name: string;
  virtual_hosts: { domains: string[]; routes: DecodedRoute[] }[];
}

/** prefix → cluster for the virtual host serving `domain`. */
function routing(rds: DecodedResponse, domain: string): [string, string][] {
  const config = decodeAny(
    rds.type_url,
    rds.resources[0]?.value ?? Buffer.alloc(0),
  ) as unknown as DecodedRouteConfig;
  const vhost = config.virtual_hosts.find((v) => v.domains.includes(domain));
  return (vhost?.routes ?? []).map((r) => [r.match.prefix ?? r.match.path ?? '', r.route?.cluster ?? '']);
}

/** Write + rename, as editors do: the watcher never sees a half-written file. */
async function save(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

function asEncoded(res: DecodedResponse): EncodedResource[] {
  return res.resources.map((r) => {
    const d = decodeAny(r.type_url, r.value) as { name?: string; cluster_name?: string };
    return { name: d.name ?? d.cluster_name ?? '', typeUrl: r.type_url, value: r.value, version: '' };
  });
}

test('a gateway node is configured from the Gateway and its bound VirtualService, and follows edits', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'portolan-gateway-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'services.yaml'), SERVICES);
  await writeFile(join(dir, 'gateway.yaml'), GATEWAY);
  await writeFile(join(dir, 'vs.yaml'), virtualService('/echo'));
  const plane = await startInProcessPlane({ configDir: dir });
  t.after(() => plane.stop());
  const config = plane.config ?? assert.fail('config registry');

  const client = new RawAdsClient(plane.address);
  t.after(() => client.close());
  client.send({ node: ROUTER_NODE, type_url: CLUSTER, resource_names: [] });
  const cds = await client.next();
  const clusters = resourceNames(cds).filter((n) => n.startsWith('outbound|'));
  assert.deepEqual(clusters.sort(), [
    'outbound|7070||echo.mesh.internal',
    'outbound|8080||shop.mesh.internal',
  ]);
  client.send({ type_url: ENDPOINT, resource_names: clusters });
  client.ack(cds);
  const eds = await client.next();
  assert.equal(eds.type_url, ENDPOINT);
  client.ack(eds, clusters);

  // LDS: one listener, on the Gateway's port, whose HTTP connection manager asks for RDS http.8080.
  client.send({ type_url: LISTENER, resource_names: [] });
  const lds = await client.next();
  assert.equal(lds.type_url, LISTENER);
  assert.deepEqual(resourceNames(lds), ['0.0.0.0_8080']);
  assert.match(
    JSON.stringify(decodeAny(LISTENER, lds.resources[0]?.value ?? Buffer.alloc(0))),
    /"http\.8080"/,
  );
  client.send({ type_url: ROUTE, resource_names: ['http.8080'] });
  client.ack(lds);
  const rds = await client.next();
  assert.equal(rds.type_url, ROUTE);
  client.ack(rds, ['http.8080']);
  assert.deepEqual(routing(rds, 'shop.example.com'), [
    ['/echo', 'outbound|7070||echo.mesh.internal'],
    ['/', 'outbound|8080||shop.mesh.internal'],
  ]);
  const held = new Map<string, EncodedResource[]>([
    [CLUSTER, asEncoded(cds)],
    [ENDPOINT, asEncoded(eds)],
    [LISTENER, asEncoded(lds)],
    [ROUTE, asEncoded(rds)],
  ]);
  assert.deepEqual(checkConsistency(held), []);
  for (const [type, rs] of held)
    for (const r of rs) assert.deepEqual(validateEncoded(type.slice(type.lastIndexOf('/') + 1), r.value), []);
  await client.expectSilence();

  // Editing the VirtualService changes the routes, and only the routes.
  await save(join(dir, 'vs.yaml'), virtualService('/api/echo'));
  const rerouted = await client.next();
  assert.equal(rerouted.type_url, ROUTE);
  assert.deepEqual(routing(rerouted, 'shop.example.com')[0], [
    '/api/echo',
    'outbound|7070||echo.mesh.internal',
  ]);
  client.ack(rerouted, ['http.8080']);
  await client.expectSilence();

  // A broken Gateway edit is reported with its line; the last good Gateway stays in force.
  await save(join(dir, 'gateway.yaml'), GATEWAY.replace('number: 8080', 'number: 80800'));
  const issue = await eventually(
    () =>
      config.debugState().files.find((f) => f.path === 'gateway.yaml')?.errors[0] ??
      assert.fail('gateway.yaml not rejected yet'),
    { timeoutMs: 5000 },
  );
  assert.equal(issue.path, 'spec.servers[0].port.number');
  assert.equal(issue.line, 8);
  assert.match(issue.message, /1\.\.65535/);
  await client.expectSilence();

  // Deleting the Gateway withdraws its listener.
  await rm(join(dir, 'gateway.yaml'));
  const withdrawn = await client.next();
  assert.equal(withdrawn.type_url, LISTENER);
  assert.deepEqual(resourceNames(withdrawn), []);
});
