// The CA's view of the shared store: a connection failure is StoreUnavailable (answered UNAVAILABLE),
// a refused statement is not; while known down, calls fail at once without waiting on the database,
// one is let through after the retry interval, and a success reports the store up again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreHealth, StoreUnavailable, type StoreState } from '../../../ca/ca-store.js';
import { isStoreUnavailable } from '../../../store/shared-store.js';
import { ManualClock } from '../../support/manual-clock.js';

const coded = (message: string, code: string): Error => Object.assign(new Error(message), { code });

test('connection failures are "unavailable"; a statement the database refused is not', () => {
  assert.equal(isStoreUnavailable(coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')), true);
  assert.equal(
    isStoreUnavailable(coded('terminating connection due to administrator command', '57P01')),
    true,
  );
  assert.equal(isStoreUnavailable(coded('connection failure', '08006')), true);
  assert.equal(isStoreUnavailable(new Error('Connection terminated unexpectedly')), true);
  assert.equal(isStoreUnavailable(new Error('Query read timeout')), true);
  assert.equal(isStoreUnavailable(coded('duplicate key value violates unique constraint', '23505')), false);
  assert.equal(isStoreUnavailable(coded('syntax error at or near "SELEC"', '42601')), false);
  assert.equal(isStoreUnavailable('not an error'), false);
});

test('while the store is known down, calls fail at once; after the retry interval one probes; success reports it up', async () => {
  const changes: StoreState[] = [];
  const clock = new ManualClock();
  const health = new StoreHealth(
    'postgres',
    200,
    (s) => changes.push(s),
    () => clock.now(),
  );
  let calls = 0;
  const failing = async (): Promise<number> => {
    calls += 1;
    throw coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');
  };
  await assert.rejects(
    () => health.run('a join token', failing),
    (err: unknown) =>
      err instanceof StoreUnavailable && /a join token is refused until it returns/.test(err.message),
  );
  assert.equal(health.state().state, 'unreachable');
  await assert.rejects(() => health.run('a join token', failing), StoreUnavailable);
  assert.equal(calls, 1, 'the second call did not reach the database');
  assert.equal(health.state().since, new Date(clock.now()).toISOString());
  clock.advance(199);
  await assert.rejects(() => health.run('a join token', failing), StoreUnavailable);
  assert.equal(calls, 1, 'still within the retry interval: refused without a probe');
  clock.advance(1);
  // A refused statement passes through as itself.
  await assert.rejects(
    () => health.run('x', () => Promise.reject(coded('duplicate key', '23505'))),
    (err: unknown) => !(err instanceof StoreUnavailable),
  );
  assert.equal(await health.run('x', () => Promise.resolve(7)), 7);
  assert.equal(health.state().state, 'up');
  assert.deepEqual(
    changes.map((c) => c.state),
    ['unreachable', 'up'],
  );
});
