// A proxyless gRPC server that cannot enforce an AuthorizationPolicy: @grpc/grpc-js-xds 1.14 without
// GRPC_XDS_EXPERIMENTAL_RBAC=true has no RBAC filter, and Portolan never marks its RBAC filters
// optional, so the server rejects (NACKs) the listener instead of serving unprotected. Started under
// a policy, it serves nothing; without the policy the same server serves. A policy that arrives
// while it already serves is NACKed too, and — xDS semantics, which docs/authorization.md warns
// about — the server keeps its last accepted listener: the NACK is what shows it.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { NackReceived } from '../../xds/server/observer.js';
import type { EchoClient } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import {
  ALLOWED,
  allowPolicy,
  callMethod,
  ECHO,
  paymentsClient,
  paymentsConfig,
  startPaymentsServer,
  writeConfigFile,
  type PaymentsServer,
} from '../support/payments-server.js';
import { freePort, WorkloadCerts } from '../support/workload-certs.js';

let dir: string;
let certs: WorkloadCerts;
let plane: InProcessPlane;
let server: PaymentsServer;
let client: EchoClient;
const nacks: NackReceived[] = [];

const writeConfig = (name: string, text: string): void => writeConfigFile(join(dir, 'config'), name, text);

before(async () => {
  assert.notEqual(process.env.GRPC_XDS_EXPERIMENTAL_RBAC, 'true', 'this file runs grpc-js-xds without RBAC');
  dir = mkdtempSync(join(tmpdir(), 'portolan-authz-no-rbac-'));
  mkdirSync(join(dir, 'config'));
  certs = await WorkloadCerts.open(dir);
  const port = await freePort();
  writeConfig('payments.yaml', paymentsConfig(port));
  writeConfig('authz.yaml', allowPolicy(['orders']));
  plane = await startInProcessPlane({
    configDir: join(dir, 'config'),
    observers: [{ nack: (_stream, nack) => nacks.push(nack) }],
  });
  server = await startPaymentsServer(plane.address, certs, port, { awaitServing: false });
  client = await paymentsClient(plane.address, certs, 'orders', 'orders-1');
});

after(async () => {
  client.close();
  server.stop();
  await plane.stop();
  certs.close();
  rmSync(dir, { recursive: true, force: true });
});

// grpc-js: "… filters[0].typed_config: portolan.authz.allow filter validation failed".
const rbacNack = (): NackReceived | undefined =>
  nacks.find((n) => n.type === 'LDS' && /portolan\.authz\.allow filter validation failed/.test(n.message));

test('started under a policy it cannot enforce, the server rejects its listener and serves nothing', async () => {
  const nack = await eventually(() => rbacNack() ?? false, {
    timeoutMs: 20_000,
    what: 'the server NACKs its listener',
  });
  assert.match(nack.message, /inbound\|\d+/, 'the server listener, by its filter chain');
  // The allowed identity (orders) is refused too: nothing is served on the port, rather than everything.
  for (let i = 0; i < 3; i++) {
    const outcome = await callMethod(client, ECHO);
    assert.equal(outcome.ok, false);
    assert.equal(outcome.code, grpc.status.UNAVAILABLE, outcome.details);
  }
  assert.equal(server.served().echo, 0, 'no call reached the service');
});

test('without the policy the same server serves; a policy arriving later is NACKed, the old listener stays', async () => {
  rmSync(join(dir, 'config', 'authz.yaml'));
  await eventually(async () => assert.deepEqual(await callMethod(client, ECHO), ALLOWED), {
    timeoutMs: 20_000,
    what: 'the server serves once no policy applies',
  });
  const before = nacks.length;
  writeConfig('authz.yaml', allowPolicy(['billing']));
  await eventually(
    () => nacks.slice(before).some((n) => /portolan\.authz\.allow filter validation failed/.test(n.message)),
    {
      timeoutMs: 20_000,
      what: 'the new listener is NACKed',
    },
  );
  // orders is not allowed by the new policy, yet is served: the server kept the listener it had.
  assert.deepEqual(await callMethod(client, ECHO), ALLOWED);
});
