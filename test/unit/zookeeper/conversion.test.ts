// ZooKeeper node → instance → Service/Endpoint conversion, without a server: Curator JSON, Dubbo
// provider URLs and the dubbo2istio hostname rule, and how instances are grouped into services.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assembleServices } from '../../../adapters/zookeeper/conversion.js';
import { parseCuratorInstance } from '../../../adapters/zookeeper/curator.js';
import { dubboHostname, parseDubboProvider } from '../../../adapters/zookeeper/dubbo.js';
import type { ParseResult, ZkInstance } from '../../../adapters/zookeeper/instance.js';
import { curatorInstanceJson, dubboProviderNode } from '../../support/zookeeper-client.js';

const CURATOR = { name: 'orders', path: '/services/orders/i1', suffix: 'service.zk' };

function instanceOf(result: ParseResult): ZkInstance {
  assert.equal(result.kind, 'instance', result.kind === 'invalid' ? result.reason : result.kind);
  return (result as { instance: ZkInstance }).instance;
}

function reasonOf(result: ParseResult): string {
  assert.equal(result.kind, 'invalid');
  return (result as { reason: string }).reason;
}

test('a Spring Cloud Curator instance: host NAME.SUFFIX, port, metadata as labels, protocol from metadata', () => {
  const json = curatorInstanceJson({
    name: 'Orders',
    id: 'i1',
    address: '10.0.0.1',
    port: 8080,
    sslPort: 8443,
    metadata: { protocol: 'grpc', zone: 'z1' },
  });
  const i = instanceOf(parseCuratorInstance(json, { ...CURATOR, name: 'Orders' }));
  assert.equal(i.hostname, 'orders.service.zk');
  assert.equal(i.address, '10.0.0.1');
  assert.deepEqual(i.ports, [
    { name: 'port', number: 8080, protocol: 'GRPC' },
    { name: 'ssl-port', number: 8443, protocol: 'TLS' },
  ]);
  assert.deepEqual(i.labels, { instance_status: 'UP', protocol: 'grpc', zone: 'z1' });
  assert.equal(i.health, 'HEALTHY');
});

test('Curator defaults and edge cases: HTTP, HTTPS ssl port, sslPort only, no payload, enabled absent', () => {
  const bare = JSON.stringify({ name: 'orders', id: 'i1', address: '10.0.0.1', port: 80, sslPort: 443 });
  assert.deepEqual(instanceOf(parseCuratorInstance(bare, CURATOR)).ports, [
    { name: 'port', number: 80, protocol: 'HTTP' },
    { name: 'ssl-port', number: 443, protocol: 'HTTPS' },
  ]);
  const sslOnly = JSON.stringify({ name: 'orders', id: 'i1', address: 'fd00::1', port: null, sslPort: 443 });
  const i = instanceOf(parseCuratorInstance(sslOnly, CURATOR));
  assert.deepEqual(i.ports, [{ name: 'ssl-port', number: 443, protocol: 'HTTPS' }]);
  assert.equal(i.address, 'fd00::1');
  assert.deepEqual(i.labels, {});
  const same = JSON.stringify({ name: 'orders', id: 'i1', address: '10.0.0.1', port: 80, sslPort: 80 });
  assert.deepEqual(
    instanceOf(parseCuratorInstance(same, CURATOR)).ports.map((p) => p.name),
    ['port'],
    'an sslPort equal to port is one port',
  );
  const numbers = JSON.stringify({
    address: '10.0.0.1',
    port: 80,
    payload: { metadata: { weight: 5, canary: true, nested: { a: 1 }, nothing: null } },
  });
  assert.deepEqual(instanceOf(parseCuratorInstance(numbers, CURATOR)).labels, {
    weight: '5',
    canary: 'true',
  });
});

test("Curator: enabled false is left out; Spring Cloud's instance_status sets the health", () => {
  const disabled = curatorInstanceJson({
    name: 'orders',
    id: 'i1',
    address: '10.0.0.1',
    port: 80,
    enabled: false,
  });
  assert.deepEqual(parseCuratorInstance(disabled, CURATOR), { kind: 'disabled' });
  const status = (s: string) =>
    instanceOf(
      parseCuratorInstance(
        curatorInstanceJson({
          name: 'orders',
          id: 'i1',
          address: '10.0.0.1',
          port: 80,
          metadata: { instance_status: s },
        }),
        CURATOR,
      ),
    ).health;
  assert.equal(status('UP'), 'HEALTHY');
  assert.equal(status('OUT_OF_SERVICE'), 'DRAINING');
  assert.equal(status('DOWN'), 'UNHEALTHY');
});

test('Curator nodes that cannot be used say why', () => {
  const reason = (data: string | undefined, name = 'orders') =>
    reasonOf(parseCuratorInstance(data, { ...CURATOR, name }));
  assert.match(reason(undefined), /no data/);
  assert.match(reason('{"address":'), /^not JSON/);
  assert.match(reason('[1,2]'), /instance: must be a JSON object/);
  assert.match(reason('{"port": 80}'), /address: missing/);
  assert.match(reason('{"address": "host.example", "port": 80}'), /not an IP address/);
  assert.match(reason('{"address": "10.0.0.1"}'), /port and sslPort are both missing/);
  assert.match(reason('{"address": "10.0.0.1", "port": "80"}'), /port: must be an integer/);
  assert.match(
    reason('{"address": "10.0.0.1", "port": 80, "enabled": "yes"}'),
    /enabled: must be true or false/,
  );
  assert.match(
    reason('{"address": "10.0.0.1", "port": 80, "payload": {"metadata": {"protocol": "smtp"}}}'),
    /unknown protocol "smtp"/,
  );
  assert.match(
    reason('{"address": "10.0.0.1", "port": 80}', 'bad name'),
    /"bad name.service.zk" is not a valid hostname/,
  );
});

test("the Dubbo hostname is dubbo2istio's: interface, -group, -version with dashes, lower-cased", () => {
  assert.equal(dubboHostname('org.demo.Greeter', '', '', ''), 'org.demo.greeter');
  assert.equal(dubboHostname('org.demo.Greeter', 'Blue', '', ''), 'org.demo.greeter-blue');
  assert.equal(dubboHostname('org.demo.Greeter', '', '1.0.0', ''), 'org.demo.greeter-1-0-0');
  assert.equal(dubboHostname('org.demo.Greeter', 'g1', '2.1', ''), 'org.demo.greeter-g1-2-1');
  assert.equal(
    dubboHostname('org.demo.Greeter', 'g1', '2.1', 'dubbo.zk'),
    'org.demo.greeter-g1-2-1.dubbo.zk',
  );
});

const DUBBO = { group: 'org.demo.Greeter', path: '/dubbo/org.demo.Greeter/providers/x', suffix: '' };

test('a Dubbo provider URL: address, port named by the scheme, the query as labels, weight', () => {
  const node = dubboProviderNode(
    'dubbo://10.0.0.5:20880/org.demo.Greeter?anyhost=true&application=demo app&group=g1' +
      '&interface=org.demo.Greeter&methods=a,b&side=provider&version=1.2&weight=20&token=x=y',
  );
  assert.ok(node.includes('%3A%2F%2F') && node.includes('+'), 'encoded like Java’s URLEncoder');
  const i = instanceOf(parseDubboProvider(node, DUBBO));
  assert.equal(i.hostname, 'org.demo.greeter-g1-1-2');
  assert.equal(i.address, '10.0.0.5');
  assert.deepEqual(i.ports, [{ name: 'dubbo', number: 20880, protocol: 'TCP' }]);
  assert.equal(i.labels.application, 'demo app');
  assert.equal(i.labels.methods, 'a,b');
  assert.equal(i.labels.token, 'x=y', 'split at the first =');
  assert.equal(i.weight, 20);
  assert.deepEqual(i.serviceLabels, { interface: 'org.demo.Greeter', group: 'g1', version: '1.2' });
});

test('Dubbo: Triple is gRPC, IPv6 works, the interface falls back to the path, weight 0 drains, enabled=false is left out', () => {
  const tri = instanceOf(
    parseDubboProvider(dubboProviderNode('tri://[fd00::5]:50051/org.demo.Greeter'), DUBBO),
  );
  assert.deepEqual(tri.ports, [{ name: 'tri', number: 50051, protocol: 'GRPC' }]);
  assert.equal(tri.address, 'fd00::5');
  assert.equal(tri.hostname, 'org.demo.greeter');
  assert.equal(tri.weight, 100, "Dubbo's default weight");
  const rest = instanceOf(
    parseDubboProvider(dubboProviderNode('rest://10.0.0.5:8080/x?interface=org.demo.Rest'), DUBBO),
  );
  assert.deepEqual([rest.hostname, rest.ports[0]?.protocol], ['org.demo.rest', 'HTTP']);
  const zero = instanceOf(parseDubboProvider(dubboProviderNode('dubbo://10.0.0.5:1/x?weight=0'), DUBBO));
  assert.deepEqual([zero.weight, zero.health], [1, 'DRAINING']);
  assert.deepEqual(parseDubboProvider(dubboProviderNode('dubbo://10.0.0.5:1/x?enabled=false'), DUBBO), {
    kind: 'disabled',
  });
});

test('Dubbo nodes that cannot be used say why', () => {
  const reason = (node: string) => reasonOf(parseDubboProvider(node, DUBBO));
  assert.match(reason('%E0%A4%A'), /not URL-encoded/);
  assert.match(reason('hello'), /not a provider URL/);
  assert.match(reason(dubboProviderNode('dubbo://10.0.0.5/org.demo.Greeter')), /is not HOST:PORT/);
  assert.match(reason(dubboProviderNode('dubbo://provider-1:20880/org.demo.Greeter')), /not an IP address/);
  assert.match(reason(dubboProviderNode('dubbo://10.0.0.5:99999/x')), /port: must be an integer/);
  assert.match(reason(dubboProviderNode('dubbo://10.0.0.5:1/x?weight=heavy')), /weight: "heavy"/);
});

function zk(path: string, hostname: string, address: string, ports: ZkInstance['ports']): ZkInstance {
  return {
    layout: 'curator',
    path,
    group: path.split('/')[2] ?? '',
    hostname,
    address,
    ports,
    labels: { id: path },
    serviceLabels: {},
    weight: 1,
    health: 'HEALTHY',
  };
}

test('assembling: one service per hostname, lowest port number, first protocol by path, own target ports', () => {
  const { services, problems } = assembleServices(
    [
      zk('/s/a/2', 'a.zk', '10.0.0.2', [{ name: 'port', number: 9090, protocol: 'HTTP' }]),
      zk('/s/a/1', 'a.zk', '10.0.0.1', [{ name: 'port', number: 9091, protocol: 'GRPC' }]),
      zk('/s/a/3', 'a.zk', '10.0.0.1', [{ name: 'port', number: 9091, protocol: 'GRPC' }]),
      zk('/s/b/1', 'b.zk', '10.0.1.1', [{ name: 'port', number: 80, protocol: 'HTTP' }]),
    ],
    'zookeeper',
  );
  assert.deepEqual(problems, []);
  assert.deepEqual([...services.keys()], ['a.zk', 'b.zk']);
  const a = services.get('a.zk');
  assert.deepEqual(a?.service.ports, [{ name: 'port', number: 9090, protocol: 'GRPC' }]);
  assert.equal(a?.service.registry, 'zookeeper');
  assert.deepEqual(
    a?.endpoints.map((e) => `${e.address}:${e.ports.port}:${e.labels.id}`),
    ['10.0.0.1:9091:/s/a/1', '10.0.0.2:9090:/s/a/2'],
    'sorted by address; a second registration of one address and port is one endpoint',
  );
  assert.deepEqual([...(a?.groups ?? [])], ['a']);
});

test('assembling: two port names on one number keep the first, and report the other', () => {
  const { services, problems } = assembleServices(
    [
      zk('/s/c/1', 'c.zk', '10.0.0.1', [{ name: 'port', number: 8443, protocol: 'HTTP' }]),
      zk('/s/c/2', 'c.zk', '10.0.0.2', [
        { name: 'port', number: 9000, protocol: 'HTTP' },
        { name: 'ssl-port', number: 8443, protocol: 'HTTPS' },
      ]),
    ],
    'zookeeper',
  );
  const c = services.get('c.zk');
  assert.deepEqual(c?.service.ports, [{ name: 'port', number: 8443, protocol: 'HTTP' }]);
  assert.deepEqual(
    c?.endpoints.map((e) => e.ports),
    [{ port: 8443 }, { port: 9000 }],
  );
  assert.deepEqual(problems, [
    {
      layout: 'curator',
      path: '/s/c/2',
      reason: `port 8443 is already the service's "port" port; its "ssl-port" port is not served`,
    },
  ]);
});
