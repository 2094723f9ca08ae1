// The agent's DNS proxy against real sockets on loopback: answers from the name table (with
// Istio's short forms), forwarding to stand-in resolvers (the next one when one is silent,
// SERVFAIL when all are), malformed packets dropped without harming other queries, UDP and TCP.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { after, before, test } from 'node:test';
import dnsPacket from 'dns-packet';
import { DnsProxy } from '../../agent/dns/dns-proxy.js';
import { DnsNameTable } from '../../agent/dns/name-table.js';
import type { Upstream } from '../../agent/dns/upstreams.js';
import { silentLogger } from '../../log/logger.js';
import { answerData, queryDns, splitAddress, startTestResolver, type TestResolver } from '../support/dns.js';

let proxy: DnsProxy;
let resolver: TestResolver;
let silent: ReturnType<typeof createSocket>;
let upstreams: Upstream[] = [];
const table = new DnsNameTable('shop');

/** dns-packet decodes the response code, though its types do not say so. */
const rcode = (p: dnsPacket.DecodedPacket): string | undefined => (p as { rcode?: string }).rcode;

before(async () => {
  resolver = await startTestResolver('192.0.2.1');
  // A resolver that never answers.
  silent = createSocket('udp4');
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
  table.update({
    'echo.vm.internal': { ips: ['10.0.0.9', 'fd00::9'], registry: 'config' },
    'reviews.shop.svc.cluster.local': {
      ips: ['10.96.0.5'],
      registry: 'kubernetes',
      shortname: 'reviews',
      namespace: 'shop',
    },
    'ratings.other.svc.cluster.local': {
      ips: ['10.96.0.6'],
      registry: 'kubernetes',
      shortname: 'ratings',
      namespace: 'other',
    },
  });
  proxy = new DnsProxy({
    host: '127.0.0.1',
    port: 0,
    table,
    upstreams: () => upstreams,
    logger: silentLogger,
    upstreamTimeoutMs: 300,
  });
  await proxy.start();
});

after(async () => {
  await proxy.stop();
  await resolver.stop();
  silent.close();
});

test('mesh names: A and AAAA from the table, case and trailing dot ignored, over UDP and TCP', async () => {
  upstreams = [splitAddress(resolver.address)];
  const a = await queryDns(proxy.address, 'Echo.VM.internal.');
  assert.deepEqual(answerData(a), ['10.0.0.9']);
  assert.equal(a.flag_aa, true);
  assert.equal((a.answers?.[0] as { ttl?: number } | undefined)?.ttl, 30);
  assert.deepEqual(answerData(await queryDns(proxy.address, 'echo.vm.internal', 'AAAA')), ['fd00::9']);
  assert.deepEqual(answerData(await queryDns(proxy.address, 'echo.vm.internal', 'A', { transport: 'tcp' })), [
    '10.0.0.9',
  ]);
  // A mesh name, another type: an empty answer, not forwarded.
  const mx = await queryDns(proxy.address, 'echo.vm.internal', 'MX');
  assert.equal(rcode(mx), 'NOERROR');
  assert.deepEqual(mx.answers, []);
  assert.equal(resolver.asked.includes('echo.vm.internal'), false);
});

test("Kubernetes-form hosts answer NAME.NS, NAME.NS.svc, and NAME in the agent's namespace", async () => {
  for (const name of ['reviews.shop', 'reviews.shop.svc', 'reviews', 'reviews.shop.svc.cluster.local'])
    assert.deepEqual(answerData(await queryDns(proxy.address, name)), ['10.96.0.5'], name);
  assert.deepEqual(answerData(await queryDns(proxy.address, 'ratings.other')), ['10.96.0.6']);
  // `ratings` alone is another namespace's: forwarded, the stand-in answers.
  upstreams = [splitAddress(resolver.address)];
  assert.deepEqual(answerData(await queryDns(proxy.address, 'ratings')), ['192.0.2.1']);
});

test('other names go upstream; a silent resolver is skipped; none answering is SERVFAIL', async () => {
  const silentUpstream = { host: '127.0.0.1', port: silent.address().port };
  upstreams = [silentUpstream, splitAddress(resolver.address)];
  const answer = await queryDns(proxy.address, 'www.example.org');
  assert.deepEqual(answerData(answer), ['192.0.2.1']);
  upstreams = [silentUpstream];
  const failed = await queryDns(proxy.address, 'www.example.net');
  assert.equal(rcode(failed), 'SERVFAIL');
  assert.deepEqual(failed.questions?.[0]?.name, 'www.example.net');
});

test('malformed packets are dropped and counted; queries around them are answered', async () => {
  upstreams = [splitAddress(resolver.address)];
  const before = proxy.stats.malformed;
  const { port } = splitAddress(proxy.address);
  const socket = createSocket('udp4');
  const response = dnsPacket.encode({ type: 'response', id: 1, questions: [{ type: 'A', name: 'x' }] });
  for (const bad of [Buffer.from([0xff]), Buffer.alloc(12, 0xff), response]) {
    await new Promise<void>((resolve) => socket.send(bad, port, '127.0.0.1', () => resolve()));
  }
  const answers = await Promise.all(
    Array.from({ length: 20 }, () => queryDns(proxy.address, 'echo.vm.internal')),
  );
  socket.close();
  assert.ok(answers.every((a) => answerData(a)[0] === '10.0.0.9'));
  assert.equal(proxy.stats.malformed - before, 3);
});
