// Who is the control plane (issue #17 item 10): its SPIFFE ID is refused to workloads by the CA and by
// `workloadIdentity` (token create), and a client accepts a server only when its certificate names
// the address dialled — else the error names --secure-xds-sans — and carries that ID.
import assert from 'node:assert/strict';
import type { PeerCertificate } from 'node:tls';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CaRequestError, CertificateAuthority } from '../../../ca/authority.js';
import { createCsr } from '../../../ca/certificates.js';
import { CONTROL_PLANE_SNI, controlPlaneCheck, hostOf } from '../../../ca/control-plane-check.js';
import { controlPlaneIdentity, IdentityError, workloadIdentity } from '../../../ca/identity.js';
import { generateKeyPair } from '../../../ca/keys.js';
import { silentLogger } from '../../../log/logger.js';
import { Store } from '../../../store/store.js';

const CP = 'spiffe://cluster.local/ns/portolan-system/sa/portolan-control-plane';

function peer(subjectaltname: string): PeerCertificate {
  return { subject: {}, subjectaltname } as unknown as PeerCertificate;
}

test('the control plane identity is never a workload’s: workloadIdentity and the CA refuse it', async () => {
  assert.equal(controlPlaneIdentity('cluster.local'), CP);
  assert.throws(
    () => workloadIdentity('cluster.local', 'portolan-system', 'portolan-control-plane'),
    (err) => err instanceof IdentityError && /control plane's own identity/.test(err.message),
  );
  assert.equal(
    workloadIdentity('cluster.local', 'portolan-system', 'other'),
    'spiffe://cluster.local/ns/portolan-system/sa/other',
    'only that one identity is reserved',
  );
  const dir = mkdtempSync(join(tmpdir(), 'portolan-cp-id-'));
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  try {
    const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
    const keys = await generateKeyPair('ec-p256');
    await assert.rejects(
      ca.sign({ csrPem: await createCsr(keys, CP), identity: CP }),
      (err) =>
        err instanceof CaRequestError &&
        err.kind === 'denied' &&
        /control plane's identity/.test(err.message),
    );
    const server = await ca.issueServerCertificate(['cp.example'], ['127.0.0.1'], 3600, undefined, [CP]);
    const { X509Certificate } = await import('node:crypto');
    assert.equal(
      new X509Certificate(server.certChainPem).subjectAltName,
      `URI:${CP}, DNS:cp.example, IP Address:127.0.0.1`,
    );
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a server certificate for other names: the error says which serve flag to set', () => {
  const check = controlPlaneCheck('cp.example:15012', 'cluster.local');
  const err = check.checkServerIdentity('cp.example', peer(`DNS:localhost, IP Address:127.0.0.1, URI:${CP}`));
  assert.ok(err);
  assert.equal(
    err.message,
    "the control plane's certificate names DNS:localhost, IP Address:127.0.0.1, not cp.example: start portolan serve with --secure-xds-sans listing cp.example (comma-separated DNS names and IPs, e.g. --secure-xds-sans cp.example,localhost,127.0.0.1), or reach it by one of the names it has",
  );
  assert.equal(
    check.lastFailure(),
    err,
    'kept for the caller, which gRPC would only call "connection failed"',
  );
});

test('a certificate from the same CA without the control plane’s ID (a workload) is refused', () => {
  const check = controlPlaneCheck('10.0.0.5:15012', 'cluster.local');
  const err = check.checkServerIdentity(
    CONTROL_PLANE_SNI,
    peer('IP Address:10.0.0.5, URI:spiffe://cluster.local/ns/shop/sa/orders'),
  );
  assert.match(
    err?.message ?? '',
    /^the server at 10\.0\.0\.5:15012 is not the control plane of cluster\.local: its certificate lacks spiffe:\/\/cluster\.local\/ns\/portolan-system\/sa\/portolan-control-plane \(it is spiffe:\/\/cluster\.local\/ns\/shop\/sa\/orders\)$/,
  );
  assert.equal(
    check.checkServerIdentity(CONTROL_PLANE_SNI, peer(`IP Address:10.0.0.5, URI:${CP}`)),
    undefined,
  );
  // Another trust domain's control plane is not ours.
  const other = controlPlaneCheck('cp.example:15012', 'example.org');
  assert.ok(other.checkServerIdentity('cp.example', peer(`DNS:cp.example, URI:${CP}`)));
});

test('an IP address is checked against IP SANs and never sent as the TLS server name', () => {
  assert.deepEqual(controlPlaneCheck('127.0.0.1:15012', 'cluster.local').channelOptions, {
    'grpc.ssl_target_name_override': CONTROL_PLANE_SNI,
  });
  assert.deepEqual(controlPlaneCheck('[::1]:15012', 'cluster.local').channelOptions, {
    'grpc.ssl_target_name_override': CONTROL_PLANE_SNI,
  });
  assert.deepEqual(controlPlaneCheck('cp.example:15012', 'cluster.local').channelOptions, {});
  assert.deepEqual(['cp.example:15012', '[::1]:15012', '127.0.0.1:1', 'host'].map(hostOf), [
    'cp.example',
    '::1',
    '127.0.0.1',
    'host',
  ]);
  const v6 = controlPlaneCheck('[::1]:15012', 'cluster.local');
  assert.equal(
    v6.checkServerIdentity(CONTROL_PLANE_SNI, peer(`IP Address:0:0:0:0:0:0:0:1, URI:${CP}`)),
    undefined,
  );
});
