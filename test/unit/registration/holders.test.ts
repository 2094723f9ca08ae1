// Several streams claiming one auto-registered entry (issue #45, item 1): the newest holds it; when
// it leaves while an older one is still connected, the older one holds the entry again — the VM
// stays in its service, and the grace starts only once no claimant is left. A report from a claimant
// that does not hold the entry waits for its turn.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../log/logger.js';
import { AutoRegistration, type AgentClaim } from '../../../registration/auto-registration.js';
import { configResource } from '../../support/mesh-fixtures.js';

const GROUP = configResource(
  'WorkloadGroup',
  'echo-vms',
  { template: { serviceAccount: 'echo' }, probe: { tcpSocket: { port: 9000 } } },
  'shop',
  'groups.yaml',
);

function claim(nodeId: string): AgentClaim {
  return {
    nodeId,
    group: 'echo-vms',
    namespace: 'shop',
    serviceAccount: 'echo',
    identity: 'spiffe://cluster.local/ns/shop/sa/echo',
    address: '10.0.0.7',
  };
}

function view(r: AutoRegistration): string[] {
  return r.list().map((v) => `${v.entry} ${v.node} ${v.state} ${v.health}`);
}

test('the newest holder leaves while an older one is connected: the older one holds the entry again', () => {
  const r = new AutoRegistration({ groups: () => [GROUP], graceMs: 60_000, logger: silentLogger });
  r.connected('agent', claim('agent/echo.vm-1'));
  r.reportHealth('agent', true, '');
  r.connected('other', claim('other'));
  assert.deepEqual(view(r), ['shop/echo-vms-10-0-0-7 other connected HEALTHY']);
  // The newer one reports and goes; the entry is the agent's again, with the agent's own report.
  r.reportHealth('other', false, 'nope');
  r.reportHealth('agent', true, 'still fine'); // while not holding: kept for its turn
  r.disconnected('other');
  assert.deepEqual(view(r), ['shop/echo-vms-10-0-0-7 agent/echo.vm-1 connected HEALTHY']);
  assert.equal(r.workloadEntries()[0]?.annotations['portolan.io/auto-registered-by'], 'agent/echo.vm-1');
  assert.equal(r.workloadEntries()[0]?.annotations['portolan.io/health'], undefined);
  // The last claimant leaves: now the grace starts.
  r.disconnected('agent');
  assert.deepEqual(view(r), ['shop/echo-vms-10-0-0-7 agent/echo.vm-1 disconnected HEALTHY']);
  r.stop();
});

test('an older claimant that leaves first changes nothing; one that reconnects holds it again', () => {
  const r = new AutoRegistration({ groups: () => [GROUP], graceMs: 60_000, logger: silentLogger });
  r.connected('old', claim('agent/echo.vm-1'));
  r.connected('new', claim('agent/echo.vm-1'));
  r.disconnected('old');
  assert.deepEqual(view(r), ['shop/echo-vms-10-0-0-7 agent/echo.vm-1 connected UNKNOWN']);
  r.connected('newer', claim('agent/echo.vm-1'));
  r.disconnected('newer');
  r.disconnected('new');
  assert.deepEqual(view(r), ['shop/echo-vms-10-0-0-7 agent/echo.vm-1 disconnected UNKNOWN']);
  r.stop();
});
