// The DNS proxy's forwarding (issue #45, item 6): each upstream query goes out with a random id from
// a fresh socket (a new random source port), and an answer is taken only if it carries that id, comes
// from the resolver asked and answers the question asked. Real UDP on loopback: the proxy, a client,
// and an upstream resolver that records what it was asked and can answer wrongly.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, test } from 'node:test';
import dnsPacket from 'dns-packet';
import { DnsProxy } from '../../../agent/dns/dns-proxy.js';
import { DnsNameTable } from '../../../agent/dns/name-table.js';
import { silentLogger } from '../../../log/logger.js';
import { answerData, queryDns } from '../../support/dns.js';

interface Asked {
  readonly id: number;
  readonly port: number;
}

let upstream: Socket;
let proxy: DnsProxy;
const asked: Asked[] = [];
/** How the upstream answers: right, or about another name than asked. */
let answerFor = (name: string): string => name;

before(async () => {
  upstream = createSocket('udp4');
  upstream.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions?.[0];
    if (!question) return;
    asked.push({ id: q.id ?? 0, port: rinfo.port });
    const name = answerFor(question.name);
    upstream.send(
      dnsPacket.encode({
        type: 'response',
        id: q.id ?? 0,
        flags: dnsPacket.RECURSION_AVAILABLE,
        questions: [{ ...question, name }],
        answers: [{ type: 'A', name, ttl: 60, data: '192.0.2.7' }],
      }),
      rinfo.port,
      rinfo.address,
    );
  });
  await new Promise<void>((resolve) => upstream.bind(0, '127.0.0.1', resolve));
  const port = upstream.address().port;
  proxy = new DnsProxy({
    host: '127.0.0.1',
    port: 0,
    table: new DnsNameTable('shop'),
    upstreams: () => [{ host: '127.0.0.1', port }],
    logger: silentLogger,
    upstreamTimeoutMs: 300,
  });
  await proxy.start();
});

after(async () => {
  await proxy.stop();
  upstream.close();
});

test('every forwarded query has a random id and a source port of its own', async () => {
  asked.length = 0;
  for (let i = 0; i < 12; i++) {
    const answer = await queryDns(proxy.address, `host${i}.example.org`);
    assert.deepEqual(answerData(answer), ['192.0.2.7']);
  }
  assert.equal(asked.length, 12);
  assert.equal(new Set(asked.map((a) => a.port)).size, 12, 'a fresh source port per query');
  const steps = asked.slice(1).map((a, i) => (a.id - (asked[i]?.id ?? 0) + 0x10000) & 0xffff);
  assert.ok(
    steps.some((s) => s !== 1),
    `ids are not sequential: ${asked.map((a) => a.id).join(', ')}`,
  );
});

test('an answer about another question is not taken: the client gets SERVFAIL, not the forgery', async () => {
  answerFor = () => 'forged.example.org';
  try {
    const answer = await queryDns(proxy.address, 'bank.example.org', 'A', { timeoutMs: 5000 });
    assert.equal((answer.flags ?? 0) & 0xf, 2, 'SERVFAIL');
    assert.deepEqual(answerData(answer), []);
  } finally {
    answerFor = (name) => name;
  }
});
