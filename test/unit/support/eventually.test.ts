// The suite's one wait helper: it returns once the check passes, and times out with a message that
// says what was awaited and how the last attempt failed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventually } from '../../support/eventually.js';

test('returns the value of the first attempt that passes; false and a throw both mean "not yet"', async () => {
  let calls = 0;
  const value = await eventually(
    () => {
      calls++;
      if (calls === 1) throw new Error('not yet');
      return calls === 3 && 'done';
    },
    { intervalMs: 1 },
  );
  assert.equal(value, 'done');
  assert.equal(calls, 3);
});

test('an assertion that passes returns at once (undefined is a pass)', async () => {
  let calls = 0;
  await eventually(() => {
    calls++;
    assert.equal(1, 1);
  });
  assert.equal(calls, 1);
});

test('times out naming what was awaited and the last error, kept as the cause', async () => {
  const failure = await eventually(() => assert.equal(2, 3), {
    timeoutMs: 30,
    intervalMs: 5,
    what: 'two to be three',
  }).then(
    () => assert.fail('resolved'),
    (err: unknown) => err,
  );
  assert.ok(failure instanceof Error);
  assert.match(
    failure.message,
    /^eventually: timed out after 30 ms \(\d+ attempts\) waiting for two to be three; last error: Expected values to be strictly equal/,
  );
  assert.ok(failure.cause instanceof assert.AssertionError);
});

test('without `what`, the message quotes the check; a predicate reports its last value', async () => {
  const ready = false as boolean;
  await assert.rejects(
    eventually(() => ready, { timeoutMs: 20, intervalMs: 5 }),
    /waiting for \(\) => ready; last value: false$/,
  );
});
