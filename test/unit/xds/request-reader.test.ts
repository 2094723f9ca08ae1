// The ACK fast path reads what the full protobufjs decoder reads, and defers anything else to it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readPlainDeltaRequest, readPlainRequest } from '../../../xds/protocol/request-reader.js';
import { ENDPOINT } from '../../../xds/proto/type-urls.js';
import {
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  encodeDeltaDiscoveryRequest,
  encodeDiscoveryRequest,
} from '../../../xds/proto/wire.js';

test('a SotW ACK and NACK read the same as with the full decoder', () => {
  for (const req of [
    { type_url: ENDPOINT, version_info: 'v1', response_nonce: '7', resource_names: ['a', 'b'] },
    {
      type_url: ENDPOINT,
      version_info: 'v1',
      response_nonce: '8',
      resource_names: ['a'],
      error_detail: { code: 3, message: 'bad cluster ü' },
    },
  ]) {
    const bytes = encodeDiscoveryRequest(req);
    assert.deepEqual(readPlainRequest(bytes), decodeDiscoveryRequest(bytes));
  }
});

/** A Struct of `fields` as protobufjs's fromObject takes it (Value members camelCase). */
function struct(fields: Record<string, unknown>): { fields: Record<string, unknown> } {
  const value = (v: unknown): unknown => {
    if (v === null) return { nullValue: 0 };
    if (typeof v === 'number') return { numberValue: v };
    if (typeof v === 'string') return { stringValue: v };
    if (typeof v === 'boolean') return { boolValue: v };
    if (Array.isArray(v)) return { listValue: { values: v.map(value) } };
    return { structValue: struct(v as Record<string, unknown>) };
  };
  return { fields: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, value(v)])) };
}

test("a SotW request with a proxyless client's node reads the same as with the full decoder", () => {
  const nodes = [
    { id: 'n1' },
    {},
    { id: '', cluster: '' },
    {
      id: 'sidecar~10.0.0.1~a.ns~ns.svc.cluster.local',
      cluster: 'c',
      user_agent_name: 'gRPC Node',
      user_agent_version: '1.14.0',
      client_features: ['envoy.lb.does_not_support_overprovisioning', 'xds.config.resource-in-sotw'],
      locality: { zone: 'z1', region: 'r1' },
      metadata: struct({
        NAMESPACE: 'ns',
        INSTANCE_IPS: '10.0.0.1,10.0.0.2',
        LABELS: { app: 'a', '10': 'ten', version: 'v1' },
        GENERATOR: 'grpc',
        n: 3.25,
        neg: -1,
        yes: true,
        no: false,
        nothing: null,
        list: ['x', 1, [true, { deep: 'ü' }], null],
        empty: {},
      }),
    },
    { id: 'n2', locality: {}, metadata: struct({}) },
    { id: 'n3', locality: { sub_zone: 's' } },
    { id: 'n4', locality: { sub_zone: 's', zone: 'z', region: 'r' } },
  ];
  for (const node of nodes) {
    const bytes = encodeDiscoveryRequest({ node, type_url: ENDPOINT, resource_names: ['a'] });
    const plain = readPlainRequest(bytes);
    assert.ok(plain?.node, JSON.stringify(node));
    assert.deepEqual(plain, decodeDiscoveryRequest(bytes));
    assert.deepEqual(
      Object.keys(plain.node?.locality ?? {}),
      Object.keys(decodeDiscoveryRequest(bytes).node?.locality ?? {}),
    );
  }
});

test("a SotW request with Envoy's node fields, or a node in an unusual shape, goes to the full decoder", () => {
  for (const node of [
    { id: 'e', user_agent_build_version: { version: { major_number: 1 } } },
    { id: 'e', extensions: [{ name: 'x' }] },
  ]) {
    const bytes = encodeDiscoveryRequest({ node, type_url: ENDPOINT });
    assert.equal(readPlainRequest(bytes), undefined, JSON.stringify(node));
  }
  // A Struct entry without a value, a `__proto__` key, two nodes, a bool encoded as 2, an id sent as a varint.
  const entry = (inner: Buffer): Buffer => Buffer.concat([Buffer.from([0x0a, inner.length]), inner]);
  const metadataNode = (entryBytes: Buffer): Buffer => {
    const structBytes = entry(entryBytes);
    return Buffer.concat([Buffer.from([0x1a, structBytes.length]), structBytes]);
  };
  const withNode = (nodeBytes: Buffer): Buffer =>
    Buffer.concat([
      Buffer.from([0x12, nodeBytes.length]),
      nodeBytes,
      encodeDiscoveryRequest({ type_url: ENDPOINT }),
    ]);
  const key = (k: string): Buffer => Buffer.concat([Buffer.from([0x0a, k.length]), Buffer.from(k)]);
  for (const nodeBytes of [
    metadataNode(key('k')),
    metadataNode(Buffer.concat([key('__proto__'), Buffer.from([0x12, 2, 0x20, 1])])),
    metadataNode(Buffer.concat([key('b'), Buffer.from([0x12, 2, 0x20, 2])])),
    Buffer.from([0x08, 0x01]),
  ])
    assert.equal(readPlainRequest(withNode(nodeBytes)), undefined, nodeBytes.toString('hex'));
  const id = Buffer.concat([Buffer.from([0x0a, 1]), Buffer.from('x')]);
  assert.equal(
    readPlainRequest(Buffer.concat([withNode(id), Buffer.from([0x12, id.length]), id])),
    undefined,
  );
  // A well-formed hand-made node is read (the cases above fail for their one difference).
  assert.equal(
    readPlainRequest(withNode(metadataNode(Buffer.concat([key('b'), Buffer.from([0x12, 2, 0x20, 1])]))))?.node
      ?.metadata?.b,
    true,
  );
});

test('a delta ACK, NACK and subscription change read the same as with the full decoder', () => {
  for (const req of [
    { type_url: ENDPOINT, response_nonce: '3' },
    { type_url: ENDPOINT, response_nonce: '4', error_detail: { code: 13, message: 'no' } },
    { type_url: ENDPOINT, resource_names_subscribe: ['a'], resource_names_unsubscribe: ['b'] },
  ]) {
    const bytes = encodeDeltaDiscoveryRequest(req);
    assert.deepEqual(readPlainDeltaRequest(bytes), decodeDeltaDiscoveryRequest(bytes));
  }
});

test('a delta request with initial versions goes to the full decoder', () => {
  const bytes = encodeDeltaDiscoveryRequest({ type_url: ENDPOINT, initial_resource_versions: { a: 'v1' } });
  assert.equal(readPlainDeltaRequest(bytes), undefined);
});

test('a truncated request is left to the full decoder', () => {
  const bytes = encodeDiscoveryRequest({ type_url: ENDPOINT, response_nonce: '1' });
  assert.equal(readPlainRequest(bytes.subarray(0, bytes.length - 1)), undefined);
});

test('a request listing more names than the limit is left to the counting path, at or under it is read', () => {
  const sotw = encodeDiscoveryRequest({
    type_url: ENDPOINT,
    response_nonce: '1',
    resource_names: ['a', 'b', 'c'],
  });
  assert.equal(readPlainRequest(sotw, 2), undefined);
  assert.deepEqual(readPlainRequest(sotw, 3)?.resourceNames, ['a', 'b', 'c']);
  const delta = encodeDeltaDiscoveryRequest({
    type_url: ENDPOINT,
    resource_names_subscribe: ['a', 'b'],
    resource_names_unsubscribe: ['c'],
  });
  assert.equal(readPlainDeltaRequest(delta, 2), undefined);
  assert.deepEqual(readPlainDeltaRequest(delta, 3)?.unsubscribe, ['c']);
});

test('a known type URL reads as the same string as the constant', () => {
  const bytes = encodeDiscoveryRequest({ type_url: ENDPOINT, response_nonce: '1' });
  assert.equal(readPlainRequest(bytes)?.typeUrl, ENDPOINT);
  const other = encodeDiscoveryRequest({ type_url: 'type.googleapis.com/x.Y', response_nonce: '1' });
  assert.equal(readPlainRequest(other)?.typeUrl, 'type.googleapis.com/x.Y');
});
