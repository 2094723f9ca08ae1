// `portolan agent`'s identity, in process: SDS on the Unix socket (`default` with the agent's SPIFFE
// ID, `ROOTCA` the CA's bundle) and new secrets pushed on the open stream at each renewal and after a
// root rotation; a CA unreachable at first start (retried, said in /healthz/ready) and a revoked token
// (the reason logged); a refused renewal (the current certificate kept until it expires).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { CREATE_CERTIFICATE_PATH } from '../../ca/certificate-messages.js';
import { controlPlaneIdentity } from '../../ca/identity.js';
import { CERT_CHAIN_FILE } from '../../mesh/workload-certs.js';
import { eventually } from '../support/eventually.js';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.js';
import {
  getText,
  RawSdsClient,
  startSecurePlane,
  startTestAgent,
  type SecurePlane,
} from './agent-helpers.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const ID = 'spiffe://cluster.local/ns/shop/sa/cart';
let cp: SecurePlane;
const cleanups: (() => Promise<void> | void)[] = [];

before(async () => {
  cp = await startSecurePlane();
});

after(async () => {
  for (const c of cleanups.reverse()) await c();
  await cp?.stop();
});

const pemCount = (pem: string): number => (pem.match(/BEGIN CERTIFICATE/g) ?? []).length;

test('SDS on the Unix socket: default and ROOTCA, and new ones pushed on the open stream at renewal and rotation', async () => {
  const agent = await startTestAgent(cp, {
    name: 'sds',
    token: cp.token('shop', 'cart').token,
    ttlSeconds: 5,
  });
  cleanups.push(() => agent.stop());
  await eventually(() => agent.readiness().ready);
  const sds = new RawSdsClient(agent.sdsSocket, ['default', 'ROOTCA']);
  cleanups.push(() => sds.close());
  const first = await sds.next();
  assert.deepEqual(first.map((s) => s.name).sort(), ['ROOTCA', 'default']);
  const cert = first.find((s) => s.name === 'default');
  const leaf = new X509Certificate(cert?.certificateChain ?? '');
  assert.equal(leaf.subjectAltName, `URI:${ID}`);
  assert.ok(leaf.checkPrivateKey(createPrivateKey(cert?.privateKey ?? '')), 'the key is the certificate’s');
  assert.equal(first.find((s) => s.name === 'ROOTCA')?.trustedCa?.trim(), cp.ca.trustBundle().trim());

  // A renewal (5 s certificates renew at 4 s): the new certificate arrives on the same stream.
  const renewed = await eventually(
    async () => {
      const next = (await sds.next(8000)).find((s) => s.name === 'default');
      assert.ok(next);
      return next;
    },
    { timeoutMs: 15_000 },
  );
  const second = new X509Certificate(renewed.certificateChain ?? '');
  assert.notEqual(second.serialNumber, leaf.serialNumber);
  assert.equal(
    second.serialNumber,
    new X509Certificate(readFileSync(join(agent.certDir, CERT_CHAIN_FILE))).serialNumber,
    'the certificate directory is written too (gRPC’s file_watcher)',
  );

  // A root rotation (`portolan ca rotate` on the control plane's data directory): the next renewal
  // brings the two-root bundle, pushed as ROOTCA.
  await promisify(execFile)(
    process.execPath,
    [MAIN, 'ca', 'rotate', '--data-dir', join(cp.dir, 'cp'), '--overlap', '1h'],
    {
      timeout: 20_000,
    },
  );
  const bundle = await eventually(
    async () => {
      const roots = (await sds.next(8000)).find((s) => s.name === 'ROOTCA');
      assert.equal(pemCount(roots?.trustedCa ?? ''), 2);
      return roots?.trustedCa ?? '';
    },
    { timeoutMs: 20_000, what: 'ROOTCA with both roots' },
  );
  assert.equal(bundle.trim(), cp.ca.trustBundle().trim());
});

test('a CA unreachable at first start: retried with backoff, the reason in /healthz/ready; enrolled once it is there', async () => {
  const relay: TcpRelay = await startTcpRelay('127.0.0.1:1'); // nothing listens on port 1
  cleanups.push(() => relay.stop());
  const agent = await startTestAgent(cp, {
    name: 'unreachable',
    token: cp.token('shop', 'cart').token,
    caAddress: relay.address,
  });
  cleanups.push(() => agent.stop());
  const notReady = await eventually(async () => {
    const r = await getText(`${agent.statusBase}/healthz/ready`);
    assert.equal(r.status, 503);
    assert.match(r.body, /certificate: none yet; last request failed: /);
    return r.body;
  });
  assert.match(notReady, /cache: empty, nothing to serve local clients yet/);
  relay.retarget(cp.address);
  await eventually(
    async () => assert.equal((await getText(`${agent.statusBase}/healthz/ready`)).status, 200),
    {
      timeoutMs: 10_000,
      what: 'enrolled after the CA came back',
    },
  );
});

test('a revoked token: the reason is logged and reported, no certificate is made', async () => {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
  const { id, token } = cp.token('shop', 'cart');
  cp.store.joinTokens.revoke(id, new Date());
  const agent = await startTestAgent(cp, { name: 'revoked', token, logger });
  cleanups.push(() => agent.stop());
  await eventually(() =>
    assert.ok(
      lines.some(
        (l) => l.includes('certificate request failed') && l.includes(`join token ${id} was revoked`),
      ),
    ),
  );
  const ready = await getText(`${agent.statusBase}/healthz/ready`);
  assert.equal(ready.status, 503);
  assert.match(
    ready.body,
    new RegExp(`certificate: none yet; last request failed: join token ${id} was revoked`),
  );
});

test('a refused renewal: logged with the reason, the current certificate kept and served until it expires', async () => {
  // The CA is reached through a relay; at renewal time it leads to a CA that refuses (as one that
  // revoked the enrollment would). ADS keeps going to the real secure port.
  const server = await ca_refusing(cp);
  cleanups.push(() => server.forceShutdown());
  const relay = await startTcpRelay(cp.address);
  cleanups.push(() => relay.stop());
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
  const agent = await startTestAgent(cp, {
    name: 'refused',
    token: cp.token('shop', 'cart').token,
    caAddress: relay.address,
    ttlSeconds: 6,
    logger,
  });
  cleanups.push(() => agent.stop());
  await eventually(() => agent.readiness().ready);
  const held = agent.context.certificates.current();
  assert.ok(held);
  relay.retarget(`127.0.0.1:${server.port}`);
  await eventually(
    () =>
      assert.ok(
        lines.some(
          (l) =>
            l.includes('certificate renewal failed: keeping the current certificate until it expires') &&
            l.includes('enrollment revoked'),
        ),
      ),
    { timeoutMs: 10_000 },
  );
  const during = await getText(`${agent.statusBase}/healthz/ready`);
  assert.equal(during.status, 200, 'still valid: still ready');
  assert.match(during.body, /last request failed: enrollment revoked/);
  assert.equal(agent.context.certificates.current()?.serial, held.serial, 'the same certificate is in use');
  await eventually(
    async () => {
      const r = await getText(`${agent.statusBase}/healthz/ready`);
      assert.equal(r.status, 503);
      assert.match(r.body, /certificate: expired at .*; last request failed: enrollment revoked/);
    },
    { timeoutMs: 15_000, what: 'not ready once the kept certificate expired' },
  );
});

/** A TLS server that looks like the control plane (its certificate) and refuses every certificate request. */
async function ca_refusing(plane: SecurePlane): Promise<grpc.Server & { port: number }> {
  const cert = await plane.ca.issueServerCertificate([], ['127.0.0.1'], 3600, undefined, [
    controlPlaneIdentity('cluster.local'),
  ]);
  const server = new grpc.Server();
  const id = (b: Buffer): Buffer => b;
  server.addService(
    {
      CreateCertificate: {
        path: CREATE_CERTIFICATE_PATH,
        requestStream: false,
        responseStream: false,
        requestSerialize: id,
        requestDeserialize: id,
        responseSerialize: id,
        responseDeserialize: id,
      },
    },
    {
      CreateCertificate: (
        _call: grpc.ServerUnaryCall<Buffer, Buffer>,
        callback: grpc.sendUnaryData<Buffer>,
      ) => callback({ code: grpc.status.PERMISSION_DENIED, details: 'enrollment revoked' }),
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      grpc.ServerCredentials.createSsl(
        Buffer.from(plane.ca.trustBundle()),
        [{ cert_chain: Buffer.from(cert.certChainPem), private_key: Buffer.from(cert.keyPem) }],
        false,
      ),
      (err, p) => (err ? reject(err) : resolve(p)),
    ),
  );
  return Object.assign(server, { port });
}
