// The RegistrationStore contract (registration/auto-registration.ts): where auto-registered VMs are
// kept across control-plane restarts. Every implementation (memory, SQLite, PostgreSQL) runs the same
// tests: what one run put is what the next run's `all()` hands to the restore, replaced by a put of
// the same key and gone after a delete. A run is an instance opened over the same storage and closed
// cleanly (its writes finished), as `portolan serve` restarting with the same data would.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RegistrationStore } from '../../registration/auto-registration.js';

/** One storage that successive runs open. */
export interface RegistrationStorage {
  /** A run's store over this storage. */
  open(): Promise<RegistrationStore>;
  /** Ends that run cleanly: its writes are finished when this resolves. */
  close(store: RegistrationStore): Promise<void>;
}

export interface RegistrationStoreSubject {
  readonly name: string;
  /** A fresh, empty storage (released by the subject's own `after`). */
  fresh(): Promise<RegistrationStorage>;
}

const value = (address: string): string =>
  JSON.stringify({ nodeId: `vm.${address}`, group: 'echo-vms', address, note: 'ünïcødé ✓' });

/** Runs `fn` with one run's store, then closes it. */
async function run<T>(storage: RegistrationStorage, fn: (store: RegistrationStore) => T): Promise<T> {
  const store = await storage.open();
  try {
    return fn(store);
  } finally {
    await storage.close(store);
  }
}

const sorted = (rows: readonly { key: string; value: string }[]) =>
  [...rows].map(({ key, value }) => ({ key, value })).sort((a, b) => a.key.localeCompare(b.key));

export function registrationStoreContract(subject: RegistrationStoreSubject): void {
  describe(`RegistrationStore contract: ${subject.name}`, () => {
    test('a fresh store holds nothing', async () => {
      const storage = await subject.fresh();
      assert.deepEqual(await run(storage, (s) => s.all()), []);
    });

    test("what one run put is what the next run's all() lists, values byte for byte", async () => {
      const storage = await subject.fresh();
      await run(storage, (s) => {
        s.put('shop/echo-vms/10.0.0.1', value('10.0.0.1'));
        s.put('shop/echo-vms/10.0.0.2', value('10.0.0.2'));
      });
      assert.deepEqual(sorted(await run(storage, (s) => s.all())), [
        { key: 'shop/echo-vms/10.0.0.1', value: value('10.0.0.1') },
        { key: 'shop/echo-vms/10.0.0.2', value: value('10.0.0.2') },
      ]);
    });

    test('a put of a stored key replaces its value (one row, the newest)', async () => {
      const storage = await subject.fresh();
      await run(storage, (s) => s.put('shop/echo-vms/10.0.0.1', value('old')));
      await run(storage, (s) => s.put('shop/echo-vms/10.0.0.1', value('new')));
      assert.deepEqual(await run(storage, (s) => sorted(s.all())), [
        { key: 'shop/echo-vms/10.0.0.1', value: value('new') },
      ]);
    });

    test('a deleted key is gone in the next run; deleting an absent key changes nothing', async () => {
      const storage = await subject.fresh();
      await run(storage, (s) => {
        s.put('shop/echo-vms/10.0.0.1', value('10.0.0.1'));
        s.put('shop/echo-vms/10.0.0.2', value('10.0.0.2'));
      });
      await run(storage, (s) => {
        s.delete('shop/echo-vms/10.0.0.1');
        s.delete('shop/echo-vms/never-stored');
      });
      assert.deepEqual(await run(storage, (s) => sorted(s.all())), [
        { key: 'shop/echo-vms/10.0.0.2', value: value('10.0.0.2') },
      ]);
    });
  });
}
