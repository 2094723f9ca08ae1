// An AuthorizationPolicy rule with an empty `from: []` or `to: []` (issue #45, item 4) is read as
// Istio reads it, as if the list were absent. Rendered as an empty principals or permissions list it
// matched nothing: on a proxyless gRPC server such a DENY was silently not enforced (and Envoy NACKs
// the listener). Here a real @grpc/grpc-js-xds XdsServer under such DENY rules refuses what they name,
// from a real @grpc/grpc-js-xds client, and lets the rest through.
import '../support/xds-rbac-env.js';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { EchoClient } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import {
  ALLOWED,
  allowPolicy,
  callMethod,
  DENIED,
  ECHO,
  paymentsClient,
  paymentsConfig,
  SHOUT,
  startPaymentsServer,
  writeConfigFile,
  type PaymentsServer,
} from '../support/payments-server.js';
import { freePort, WorkloadCerts } from '../support/workload-certs.js';

let dir: string;
let certs: WorkloadCerts;
let plane: InProcessPlane;
let server: PaymentsServer;
const clients: EchoClient[] = [];

// Rule 0: anyone (`from: []`) calling Shout. Rule 1: batch calling anything (`to: []`).
const DENY_WITH_EMPTY_LISTS = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: { name: empty-lists, namespace: shop }
spec:
  selector: { matchLabels: { app: payments } }
  action: DENY
  rules:
    - from: []
      to:
        - operation:
            paths: [${SHOUT}]
    - from:
        - source:
            principals: [cluster.local/ns/shop/sa/batch]
      to: []
`;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-authz-empty-'));
  mkdirSync(join(dir, 'config'));
  certs = await WorkloadCerts.open(dir);
  const port = await freePort();
  const configDir = join(dir, 'config');
  writeConfigFile(configDir, 'payments.yaml', paymentsConfig(port));
  writeConfigFile(configDir, 'authz.yaml', allowPolicy(['orders', 'batch']));
  writeConfigFile(configDir, 'deny.yaml', DENY_WITH_EMPTY_LISTS);
  plane = await startInProcessPlane({ configDir });
  server = await startPaymentsServer(plane.address, certs, port);
});

after(async () => {
  await eventually(
    () =>
      clients.every((c) => c.getChannel().getConnectivityState(false) !== grpc.connectivityState.CONNECTING),
    { timeoutMs: 15_000, what: 'no client channel is connecting' },
  );
  for (const c of clients.splice(0)) c.close();
  server.stop();
  await plane.stop();
  certs.close();
  rmSync(dir, { recursive: true, force: true });
});

async function client(serviceAccount: string): Promise<EchoClient> {
  const c = await paymentsClient(plane.address, certs, serviceAccount, `${serviceAccount}-${clients.length}`);
  clients.push(c);
  return c;
}

test('grpc-js: DENY rules with `from: []` and `to: []` are enforced as if the list were absent', async () => {
  const orders = await client('orders');
  // Served at all (Echo is allowed for orders), then: Shout is denied to anyone (rule 0).
  await eventually(async () => assert.deepEqual(await callMethod(orders, ECHO), ALLOWED), {
    timeoutMs: 20_000,
    what: 'orders calls Echo',
  });
  const shouts = server.served().shout;
  assert.deepEqual(await callMethod(orders, SHOUT), DENIED, '`from: []` DENY on Shout refuses orders');
  // batch is denied everything (rule 1), once the server serves it.
  const batch = await client('batch');
  const echoes = server.served().echo;
  await eventually(
    async () => {
      const outcome = await callMethod(batch, ECHO);
      assert.notEqual(outcome.code, grpc.status.UNAVAILABLE, outcome.details);
      assert.deepEqual(outcome, DENIED, '`to: []` DENY for batch refuses its Echo');
    },
    { timeoutMs: 20_000, what: 'batch refused' },
  );
  assert.deepEqual(await callMethod(batch, SHOUT), DENIED);
  assert.equal(server.served().shout, shouts, 'no denied Shout reached the service');
  assert.equal(server.served().echo, echoes, "batch's refused Echo never reached the service");
});
