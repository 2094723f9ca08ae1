// Nothing a client sends in its requests grows the control plane unbounded (issue #45, item 5): a
// raw ADS client plays the attacker against a real `portolan serve`. Five streams NACK with 3 MiB
// messages (each under the 4 MiB request limit): the log, the store (data directory) and the debug
// views (/debug/push_status, /debug/historyz) keep each message cut to 4 KiB with a marker. Nodes
// with a megabyte id, cluster, user agent, locality or metadata are refused with INVALID_ARGUMENT
// naming the field, and never logged or stored. A stream of a well-behaved client, open throughout,
// is unharmed, and a new one is served.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { CLIENT_INPUT_LIMITS } from '../../xds/server/client-input.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { grpcNode, RawAdsClient } from '../support/raw-ads-client.js';

const MIB = 1024 * 1024;
const HUGE = 'x'.repeat(3 * MIB);
/** What a bounded message may take, marker included. */
const MESSAGE_MAX = CLIENT_INPUT_LIMITS.errorMessageChars + 100;

let dir: string;
let serve: PortolanProcess;
const clients: RawAdsClient[] = [];

function connect(): RawAdsClient {
  // Each on a connection of its own: the streams do not share an HTTP/2 session's fate.
  const c = new RawAdsClient(serve.xdsAddress, { 'grpc.use_local_subchannel_pool': 1 });
  clients.push(c);
  return c;
}

function dirBytes(path: string): number {
  let total = 0;
  for (const e of readdirSync(path, { withFileTypes: true }))
    total += e.isDirectory() ? dirBytes(join(path, e.name)) : statSync(join(path, e.name)).size;
  return total;
}

async function getText(path: string): Promise<string> {
  const res = await fetch(`${serve.httpBase}${path}`);
  assert.equal(res.status, 200, path);
  return res.text();
}

const logBytes = (): number => serve.logs.reduce((n, line) => n + JSON.stringify(line).length, 0);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-input-bounds-'));
  serve = await startPortolanProcess(['--registries', 'mock', '--data-dir', join(dir, 'data')]);
});

after(async () => {
  for (const c of clients.splice(0)) c.close();
  await serve.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('3 MiB NACK messages and megabyte node fields stay bounded in the log, the store and the debug views', async () => {
  const bystander = connect();
  bystander.send({ node: grpcNode('bystander'), type_url: CLUSTER, resource_names: [] });
  bystander.ack(await bystander.next(20_000));
  const dataBefore = dirBytes(join(dir, 'data'));
  const logBefore = logBytes();

  // Five attackers, each NACKing its first response with 3 MiB, then leaving (the store writes the
  // last NACK of each type when a connection ends).
  for (let i = 0; i < 5; i++) {
    const attacker = connect();
    attacker.send({ node: grpcNode(`nacker-${i}`), type_url: CLUSTER, resource_names: [] });
    const res = await attacker.next(20_000);
    attacker.send({
      type_url: CLUSTER,
      version_info: '',
      response_nonce: res.nonce,
      resource_names: [],
      error_detail: { code: grpc.status.INVALID_ARGUMENT, message: HUGE },
    });
    await eventually(
      async () => assert.ok((await getText('/debug/push_status')).includes(`nacker-${i}`), 'NACK recorded'),
      { timeoutMs: 20_000, what: `nacker-${i}'s NACK recorded` },
    );
    attacker.close();
  }

  // Megabyte node fields: refused, naming the field and the bound.
  const refusals: [string, object][] = [
    ['node.id', { ...grpcNode('x'.repeat(MIB)) }],
    ['node.cluster', { ...grpcNode('big-cluster'), cluster: 'c'.repeat(MIB) }],
    ['node.user_agent_name', { ...grpcNode('big-agent'), user_agent_name: 'a'.repeat(MIB) }],
    ['node.locality.zone', { ...grpcNode('big-zone'), locality: { zone: 'z'.repeat(MIB) } }],
    [
      'node.metadata',
      { ...grpcNode('big-metadata'), metadata: { fields: { PAD: { stringValue: 'm'.repeat(MIB) } } } },
    ],
  ];
  for (const [field, node] of refusals) {
    const c = connect();
    c.send({ node, type_url: CLUSTER, resource_names: [] });
    const status = await c.status(20_000);
    assert.equal(status.code, grpc.status.INVALID_ARGUMENT, `${field}: ${status.details}`);
    assert.match(
      status.details,
      new RegExp(`invalid node: ${field.replace(/\./g, '\\.')} is \\d+ .*; at most \\d+`),
    );
  }

  // Served views: each NACK message cut, with its marker; nothing of a megabyte anywhere.
  const pushStatus = JSON.parse(await getText('/debug/push_status')) as { nacks: { message: string }[] };
  assert.equal(pushStatus.nacks.length, 5);
  for (const n of pushStatus.nacks) {
    assert.ok(n.message.length <= MESSAGE_MAX, `push_status message of ${n.message.length}`);
    assert.match(n.message, /… \[truncated: \d+ more characters\]$/);
  }
  await eventually(
    async () => {
      const h = JSON.parse(await getText('/debug/historyz')) as {
        proxies: { nodeId: string; disconnectedAt: string | null }[];
      };
      assert.equal(h.proxies.filter((p) => p.nodeId.startsWith('nacker-') && p.disconnectedAt).length, 5);
    },
    { timeoutMs: 20_000, what: "the nackers' disconnects stored" },
  );
  for (const path of ['/debug/push_status', '/debug/historyz', '/debug/syncz'])
    assert.ok((await getText(path)).length < 200 * 1024, `${path} stays small`);
  assert.ok(logBytes() - logBefore < 200 * 1024, `log grew by ${logBytes() - logBefore} characters`);
  assert.ok(!serve.logs.some((l) => JSON.stringify(l).length > 16 * 1024), 'no log line over 16 KiB');
  const grown = dirBytes(join(dir, 'data')) - dataBefore;
  assert.ok(grown < 2 * MIB, `data directory grew by ${grown} bytes`);

  // The bystander's stream is still open and served; a new client is served.
  assert.equal(await Promise.race([bystander.status(200).catch(() => 'open')]), 'open');
  const newcomer = connect();
  newcomer.send({ node: grpcNode('newcomer'), type_url: CLUSTER, resource_names: [] });
  assert.equal((await newcomer.next(20_000)).type_url, CLUSTER);
});
