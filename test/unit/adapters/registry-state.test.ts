// RegistryState: what a registry publishes, its staleness, and the sync events the history records.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RegistryState } from '../../../adapters/registry-state.js';
import type { SyncEvent } from '../../../model/registry.js';
import type { ChangeEvent, RegistrySnapshot } from '../../../model/change.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

function snap(address: string): RegistrySnapshot {
  const host = 'a.state.internal';
  return {
    services: new Map([[host, service(host, [servicePort('grpc', 7070)])]]),
    endpoints: new Map([[host, [endpoint(address, { grpc: 7070 })]]]),
  };
}

function recording(): { state: RegistryState; events: SyncEvent['kind'][]; changes: ChangeEvent[] } {
  const state = new RegistryState();
  const events: SyncEvent['kind'][] = [];
  const changes: ChangeEvent[] = [];
  state.onSyncEvent((e) => events.push(e.kind));
  state.onChange((c) => changes.push(c));
  return { state, events, changes };
}

test('a partial answer is published but stays stale, and records no recovery', () => {
  const { state, events, changes } = recording();
  state.replace(snap('10.0.0.1'));
  state.fail(new Error('watch of b failed'));
  state.replace(snap('10.0.0.2'), new Error('watch of b failed'));
  assert.equal(changes.length, 2, 'the healthy part of the change is pushed');
  assert.equal(state.status().stale, true);
  assert.equal(state.status().lastError, 'watch of b failed');
  assert.deepEqual(events, ['synced', 'failed', 'synced'], 'no failed/synced pair per publish');

  state.replace(snap('10.0.0.2'));
  assert.equal(state.status().stale, false);
  assert.deepEqual(events, ['synced', 'failed', 'synced', 'synced'], 'the recovery is recorded once');
});

test('failing repeatedly records one failure; a restored snapshot is stale until a live sync', () => {
  const { state, events } = recording();
  state.restore(snap('10.0.0.1'), '2026-01-01T00:00:00.000Z');
  assert.equal(state.hasSynced(), true);
  assert.equal(state.status().restoredFrom, '2026-01-01T00:00:00.000Z');
  state.fail(new Error('down'));
  state.fail(new Error('still down'));
  assert.equal(state.status().lastError, 'still down');
  state.replace(snap('10.0.0.1'));
  assert.equal(state.status().stale, false);
  assert.equal(state.status().restoredFrom, undefined);
  assert.deepEqual(events, ['restored', 'failed', 'synced']);
});
