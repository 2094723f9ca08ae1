// Service port protocol by Istio's rules: appProtocol, else the port-name prefix, case-insensitive.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { portProtocol, type KubePortProtocolInput } from '../../../adapters/kubernetes/protocol.js';
import type { Protocol } from '../../../model/service.js';

const CASES: [KubePortProtocolInput, Protocol][] = [
  // the name alone, exactly a protocol
  [{ name: 'http' }, 'HTTP'],
  [{ name: 'http2' }, 'HTTP2'],
  [{ name: 'grpc' }, 'GRPC'],
  [{ name: 'https' }, 'HTTPS'],
  [{ name: 'tls' }, 'TLS'],
  [{ name: 'tcp' }, 'TCP'],
  [{ name: 'mongo' }, 'MONGO'],
  [{ name: 'redis' }, 'REDIS'],
  [{ name: 'mysql' }, 'MYSQL'],
  [{ name: 'udp' }, 'UDP'],
  // a prefix before the first hyphen
  [{ name: 'http-web' }, 'HTTP'],
  [{ name: 'http2-api' }, 'HTTP2'],
  [{ name: 'grpc-echo' }, 'GRPC'],
  [{ name: 'https-admin' }, 'HTTPS'],
  [{ name: 'tls-passthrough' }, 'TLS'],
  [{ name: 'tcp-db' }, 'TCP'],
  [{ name: 'redis-cache-1' }, 'REDIS'],
  // case-insensitive
  [{ name: 'GRPC' }, 'GRPC'],
  [{ name: 'Http-Web' }, 'HTTP'],
  // grpc-web is matched whole before the hyphen split; Portolan carries it as HTTP2
  [{ name: 'grpc-web' }, 'HTTP2'],
  [{ name: 'grpc-web-ui' }, 'HTTP2'],
  [{ name: 'http_proxy' }, 'HTTP'],
  // nothing recognised: Istio would sniff, Portolan says TCP
  [{ name: 'web' }, 'TCP'],
  [{ name: 'httpx' }, 'TCP'],
  [{ name: 'web-http' }, 'TCP'],
  [{ name: '' }, 'TCP'],
  // appProtocol wins over the name, and follows the same rules
  [{ name: 'http', appProtocol: 'grpc' }, 'GRPC'],
  [{ name: 'web', appProtocol: 'HTTP2' }, 'HTTP2'],
  [{ name: 'grpc', appProtocol: 'tcp' }, 'TCP'],
  [{ name: 'grpc', appProtocol: 'example.com/custom' }, 'TCP'],
  // the Service API's standard appProtocols
  [{ name: 'web', appProtocol: 'kubernetes.io/h2c' }, 'HTTP2'],
  [{ name: 'web', appProtocol: 'kubernetes.io/ws' }, 'HTTP'],
  [{ name: 'web', appProtocol: 'kubernetes.io/wss' }, 'HTTPS'],
  // the L4 protocol UDP wins over everything
  [{ name: 'grpc', protocol: 'UDP' }, 'UDP'],
  [{ name: 'dns', protocol: 'UDP', appProtocol: 'http' }, 'UDP'],
  [{ name: 'http', protocol: 'TCP' }, 'HTTP'],
  [{ name: 'http', protocol: 'SCTP' }, 'HTTP'],
];

test('port protocol follows Istio: appProtocol, else the name prefix', () => {
  for (const [input, want] of CASES) assert.equal(portProtocol(input), want, JSON.stringify(input));
});
