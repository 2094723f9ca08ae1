// Sidecar scoping and DestinationRules through the whole plane: two Envoy sidecars in different
// namespaces on one ADS server get different CDS (their views must not share cached resources),
// and editing the Sidecar file changes what the scoped one is sent, live.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { decodedResources, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';

const WEB = 'web.shop.internal';
const PAY = 'pay.billing.internal';

function envoyNode(id: string, namespace: string): object {
  const metadata = { NAMESPACE: namespace, INTERCEPTION_MODE: 'REDIRECT' };
  return {
    id,
    cluster: 'web',
    user_agent_name: 'envoy',
    metadata: {
      fields: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, { stringValue: v }])),
    },
  };
}

const SIDECAR = (hosts: string) =>
  `apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: shop}\nspec:\n  egress: [{hosts: [${hosts}]}]\n`;
const RULE =
  'apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: web, namespace: shop}\nspec:\n' +
  `  host: ${WEB}\n  exportTo: ["."]\n  trafficPolicy: {loadBalancer: {simple: RANDOM}}\n  subsets: [{name: v1, labels: {version: v1}}]\n`;

/** Outbound cluster names of the CDS wildcard response, after ACKing the one before it. */
async function clusters(ads: RawAdsClient): Promise<{ names: string[]; lb: Map<string, unknown> }> {
  const res = await ads.next();
  assert.equal(res.type_url, CLUSTER);
  ads.ack(res);
  const names = resourceNames(res)
    .filter((n) => n.startsWith('outbound|'))
    .sort();
  const lb = new Map(
    decodedResources<{ name: string; lb_policy?: string }>(res).map((c) => [c.name, c.lb_policy] as const),
  );
  return { names, lb };
}

test('two namespaces, two views: the Sidecar and the namespace-local rule shape only the shop sidecar', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'portolan-scope-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'sidecar.yaml'), SIDECAR('"./*"'));
  await writeFile(join(dir, 'rule.yaml'), RULE);
  const plane = await startInProcessPlane({ configDir: dir });
  t.after(() => plane.stop());
  plane.mock.putService(mockService(WEB, [servicePort('http', 8080, 'HTTP')], { namespace: 'shop' }));
  plane.mock.putService(mockService(PAY, [servicePort('grpc', 7070)], { namespace: 'billing' }));
  plane.mock.setEndpoints(WEB, [endpoint('127.0.0.1', { http: 8080 }, { labels: { version: 'v1' } })]);
  plane.mock.setEndpoints(PAY, [endpoint('127.0.0.2', { grpc: 7070 })]);
  const config = plane.config ?? assert.fail();
  await eventually(() => assert.equal(config.meshConfig().sidecars.length, 1));

  const shop = new RawAdsClient(plane.address);
  const other = new RawAdsClient(plane.address);
  t.after(() => {
    shop.close();
    other.close();
  });
  shop.send({ node: envoyNode('sidecar~127.0.1.1~web-1~shop.svc', 'shop'), type_url: CLUSTER });
  other.send({ node: envoyNode('sidecar~127.0.1.2~ops-1~ops.svc', 'ops'), type_url: CLUSTER });

  const s = await clusters(shop);
  assert.deepEqual(s.names, [`outbound|8080|v1|${WEB}`, `outbound|8080||${WEB}`]);
  assert.equal(s.lb.get(`outbound|8080||${WEB}`), 'RANDOM');
  const o = await clusters(other);
  assert.deepEqual(o.names, [`outbound|7070||${PAY}`, `outbound|8080||${WEB}`]);
  assert.equal(o.lb.get(`outbound|8080||${WEB}`), 'ROUND_ROBIN', 'the rule is exported to shop only');

  // Widen the Sidecar: the shop sidecar now also gets billing's service.
  await writeFile(join(dir, 'sidecar.yaml'), SIDECAR('"./*", "billing/*"'));
  await eventually(
    async () => {
      const widened = await clusters(shop); // each try reads (and ACKs) the next CDS response
      assert.ok(widened.names.includes(`outbound|7070||${PAY}`), widened.names.join(', '));
    },
    { timeoutMs: 15_000 },
  );
});
