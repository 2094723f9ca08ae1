// The contract every Registry keeps, as one suite run against each implementation (the way undici
// runs one cache-store suite against every store): test/contract/<registry>.test.ts each give a
// harness that builds the registry over its real source (or a stand-in) and can change, break and
// repair that source. The contract:
//   - the first sync gates readiness: not synced until start() resolves with a sync, and the
//     aggregate's readiness follows;
//   - a source failure keeps the last snapshot, marked stale (status().stale, lastError), with no
//     change event; recovery records exactly one `synced` sync event, and the snapshot then follows
//     the source again;
//   - a restored (stored) snapshot is served until the first live sync, which replaces it;
//   - `endpointsOnly` is set exactly when only endpoints changed, naming exactly the changed hostnames;
//   - stop() ends every watch and timer: nothing reaches the source afterwards, no handle stays
//     open, and a change in the source produces no event.
// Where an item cannot apply to a source, its harness says so in `capabilities` (with the reason), and
// the suite registers the case that does apply instead: nothing is skipped at run time.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { AggregateDiscovery } from '../../aggregate/aggregate-discovery.js';
import { endpointsOnly, changedHosts, type ChangeEvent, type RegistrySnapshot } from '../../model/change.js';
import type { Registry, SyncEvent } from '../../model/registry.js';
import { eventually } from './eventually.js';
import { endpoint, service, servicePort } from './model-fixtures.js';
import { StubRegistry } from './stub-registry.js';

/** A service as the suite asks a source to hold it: one port (8080, named by the harness), endpoints by address. */
export interface ContractService {
  /** A short name; the harness maps it to the hostname its registry serves. */
  readonly name: string;
  /** The port's protocol: changing it changes the service's definition, not its endpoints. */
  readonly protocol: 'GRPC' | 'HTTP';
  /** IPv4 addresses of its endpoints, all serving port 8080. */
  readonly addresses: readonly string[];
}

/** One change to the source: `before` absent adds the service, `after` absent removes it. */
export interface SourceChange {
  readonly before?: ContractService;
  readonly after?: ContractService;
}

/** A registry over a source the test controls. */
export interface RegistryUnderTest {
  /** Not started; the suite starts and stops it. */
  readonly registry: Registry;
  /** The hostname the registry serves the service `name` under. */
  hostname(name: string): string;
  /** Applies one change to the source, touching only what differs (endpoints alone stay endpoints alone). */
  write(change: SourceChange): Promise<void>;
  /** Makes the source fail for the registry (capabilities.sourceFails). */
  breakSource?(): Promise<void>;
  /** Undoes breakSource(); the source holds what it held before. */
  repairSource?(): Promise<void>;
  /** Requests (or connections) the source has received so far, where it can count them. */
  sourceActivity?(): number;
  /**
   * Resolves once the registry has taken in everything the source has said up to now, shown by
   * something observable (the registry asking the source again after its last answer, a marker it
   * has read, a failure it recorded after the call) rather than by time passing; rejects when the
   * harness's bound runs out. A negative check ("nothing more was published", "the state stayed")
   * runs after it, so a late event would have arrived by then and fails it. While the source is
   * broken: the registry has seen it fail again since the call.
   */
  settled(): Promise<void>;
  /** Releases the source (the suite has stopped the registry). */
  close(): Promise<void>;
}

export interface RegistryCapabilities {
  /** The harness can make the source fail (breakSource/repairSource). */
  readonly sourceFails: boolean;
  /** A source failing when the registry starts holds the first sync back: start() resolves unsynced. */
  readonly failureAtStartHoldsSync: boolean;
  /**
   * What restore() does: serve the stored snapshot, stale, until the first live sync replaces it;
   * or make it the registry's own content, when the registry is its own source.
   */
  readonly restore: 'until-live-sync' | 'becomes-the-source';
  /**
   * What a first live sync that finds the source empty does to a restored snapshot: replace it, or
   * distrust the empty answer (keep the snapshot, stale, saying why).
   */
  readonly emptySourceAfterRestore: 'replaces' | 'is-distrusted';
}

export interface RegistryHarness {
  readonly name: string;
  readonly capabilities: RegistryCapabilities;
  /** A fresh source holding `services`, and a registry reading it. */
  create(services: readonly ContractService[]): Promise<RegistryUnderTest>;
  /** Bound on each wait for the registry to follow its source; default 10 s. */
  readonly timeoutMs?: number;
  /** How long the stop test watches for activity: longer than any poll or retry the harness configured. */
  readonly quietMs: number;
}

const STORED_AT = '2026-01-01T00:00:00.000Z';

export function registryContract(harness: RegistryHarness): void {
  const can = harness.capabilities;
  const timeoutMs = harness.timeoutMs ?? 10_000;
  const until = <T>(check: () => T, what?: string) =>
    eventually(check, { timeoutMs, ...(what !== undefined && { what }) });

  describe(`registry contract: ${harness.name}`, () => {
    test('the first sync gates readiness: not synced until start() resolves with it; the aggregate follows', async (t) => {
      const { u, source } = await setup(t, harness, [svc('alpha', ['10.1.0.1', '10.1.0.2'])]);
      const seen = record(u.registry);
      const other = new StubRegistry('other');
      other.publish([]);
      const aggregate = new AggregateDiscovery([other, u.registry]);
      assert.equal(u.registry.hasSynced(), false);
      assert.equal(u.registry.status().synced, false);
      assert.equal(aggregate.hasSynced(), false, 'the aggregate waits for every registry');
      assert.equal(u.registry.snapshot().services.size, 0, 'nothing is published before start');

      await aggregate.start();
      assert.equal(u.registry.hasSynced(), true, 'synced when start() resolves');
      assert.equal(aggregate.hasSynced(), true);
      assert.deepEqual(viewOf(u.registry.snapshot()), source.view(), 'the first sync is the whole source');
      assert.ok(aggregate.service(u.hostname('alpha')), 'the aggregate serves it');
      const status = u.registry.status();
      assert.deepEqual(
        {
          synced: status.synced,
          stale: status.stale,
          lastError: status.lastError,
          hasSyncTime: !!status.lastSyncAt,
        },
        { synced: true, stale: false, lastError: undefined, hasSyncTime: true },
      );
      assert.deepEqual(seen.syncs, ['synced']);
      assert.deepEqual(seen.changes.map(summary), [
        { hostnames: [u.hostname('alpha')], endpointsOnly: false },
      ]);
    });

    if (can.sourceFails && can.failureAtStartHoldsSync) {
      test('a source failing at start holds readiness back until it answers', async (t) => {
        const { u, source } = await setup(t, harness, [svc('alpha', ['10.1.0.1'])]);
        await u.breakSource?.();
        const seen = record(u.registry);
        const aggregate = new AggregateDiscovery([u.registry]);
        await aggregate.start(); // resolves: a failing source is retried in the background
        assert.equal(u.registry.hasSynced(), false);
        assert.equal(aggregate.hasSynced(), false);
        const failing = u.registry.status();
        assert.equal(failing.synced, false);
        assert.equal(failing.stale, false, 'nothing is served, so nothing is stale');
        assert.notEqual(failing.lastError ?? '', '', 'the reason is reported');
        assert.equal(u.registry.snapshot().services.size, 0);

        await u.repairSource?.();
        await until(() => assert.equal(aggregate.hasSynced(), true), 'the first sync after repair');
        assert.deepEqual(viewOf(u.registry.snapshot()), source.view());
        assert.equal(u.registry.status().lastError, undefined);
        assert.deepEqual(seen.syncs, ['failed', 'synced']);
      });
    }

    if (can.sourceFails) {
      test('a failing source keeps the last snapshot, marked stale with the reason, and emits no change', async (t) => {
        const { u } = await setup(t, harness, [
          svc('alpha', ['10.1.0.1', '10.1.0.2']),
          svc('beta', ['10.2.0.1']),
        ]);
        const aggregate = new AggregateDiscovery([u.registry]);
        await aggregate.start();
        const before = viewOf(u.registry.snapshot());
        const seen = record(u.registry);

        await u.breakSource?.();
        await until(() => assert.equal(u.registry.status().stale, true), 'the registry to go stale');
        await u.settled();
        const status = u.registry.status();
        assert.equal(status.stale, true);
        assert.notEqual(status.lastError ?? '', '', 'the reason is reported');
        assert.ok(status.lastErrorAt);
        assert.equal(status.synced, true, 'a failure does not unsync');
        assert.equal(aggregate.hasSynced(), true, 'readiness is not lost');
        assert.deepEqual(viewOf(u.registry.snapshot()), before, 'the last snapshot is kept');
        assert.deepEqual(seen.changes, [], 'no change event');
        assert.deepEqual(seen.syncs, ['failed'], 'the failure is recorded once');
      });

      test('recovery records exactly one synced event, and the snapshot then follows the source', async (t) => {
        const alpha = svc('alpha', ['10.1.0.1']);
        const { u, source } = await setup(t, harness, [alpha]);
        await u.registry.start();
        await u.breakSource?.();
        await until(() => assert.equal(u.registry.status().stale, true), 'the registry to go stale');
        const seen = record(u.registry);

        await u.repairSource?.();
        await until(() => {
          assert.equal(u.registry.status().stale, false);
          assert.equal(u.registry.status().lastError, undefined);
        }, 'recovery');
        await u.settled();
        assert.deepEqual(seen.syncs, ['synced'], 'exactly one synced event');
        assert.deepEqual(seen.changes, [], 'the source did not change, so nothing is announced');
        assert.deepEqual(viewOf(u.registry.snapshot()), source.view());

        await source.put({ ...alpha, addresses: ['10.1.0.1', '10.1.0.3'] });
        await until(
          () => assert.deepEqual(viewOf(u.registry.snapshot()), source.view()),
          'a change after recovery',
        );
      });
    }

    if (can.restore === 'until-live-sync') {
      test('a restored snapshot is served, stale, until the first live sync replaces it', async (t) => {
        const { u, source } = await setup(t, harness, [svc('live', ['10.5.0.1'])]);
        // Where it can, the source is down at start, so the restored snapshot has to last.
        const sourceDown = can.sourceFails && can.failureAtStartHoldsSync;
        if (sourceDown) await u.breakSource?.();
        const seen = record(u.registry);
        const stored = storedSnapshot(u);
        assert.equal(typeof u.registry.restore, 'function', 'the registry can be restored');
        u.registry.restore?.(stored, STORED_AT);
        assertRestored(u.registry, stored, 'right after restore()');

        await u.registry.start();
        if (sourceDown) {
          await u.settled();
          assertRestored(u.registry, stored, 'while the source is down');
          await u.repairSource?.();
        }
        await until(() => {
          assert.deepEqual(viewOf(u.registry.snapshot()), source.view());
          assert.equal(u.registry.status().restoredFrom, undefined);
          assert.equal(u.registry.status().stale, false);
        }, 'the live sync to replace the restored snapshot');
        assert.equal(seen.syncs[0], 'restored');
        assert.equal(seen.syncs.filter((kind) => kind === 'synced').length, 1, seen.syncs.join(', '));
        assert.deepEqual(seen.changes.map(summary).at(-1), {
          hostnames: [u.hostname('live'), u.hostname('stored')].sort(),
          endpointsOnly: false,
        });
      });

      if (can.emptySourceAfterRestore === 'replaces') {
        test('a first live sync that finds the source empty replaces a restored snapshot too', async (t) => {
          const { u } = await setup(t, harness, []);
          u.registry.restore?.(storedSnapshot(u), STORED_AT);
          await u.registry.start();
          await until(() => {
            assert.equal(u.registry.snapshot().services.size, 0);
            assert.equal(u.registry.status().restoredFrom, undefined);
            assert.equal(u.registry.status().stale, false);
          }, 'the empty live sync to replace the restored snapshot');
        });
      } else {
        test('a source that answers empty after a restore is distrusted: the restored snapshot stays, stale, with the reason', async (t) => {
          const { u } = await setup(t, harness, []);
          const stored = storedSnapshot(u);
          u.registry.restore?.(stored, STORED_AT);
          await u.registry.start();
          await until(
            () => assert.notEqual(u.registry.status().lastError ?? '', ''),
            'the empty answer to be reported',
          );
          await u.settled();
          assertRestored(u.registry, stored, 'after the empty answer');
        });
      }
    } else {
      test('a restored snapshot becomes the registry’s own content, served at once and kept by start()', async (t) => {
        const { u } = await setup(t, harness, []);
        const stored = storedSnapshot(u);
        u.registry.restore?.(stored, STORED_AT);
        const check = (when: string): void => {
          assert.equal(u.registry.hasSynced(), true, when);
          assert.deepEqual(viewOf(u.registry.snapshot()), viewOf(stored), when);
          assert.equal(u.registry.status().stale, false, `${when}: it is the source, so not stale`);
        };
        check('right after restore()');
        await u.registry.start();
        check('after start()');
      });
    }

    test('endpointsOnly is set exactly when only endpoints changed, naming exactly the changed hostnames', async (t) => {
      const alpha = svc('alpha', ['10.1.0.1']);
      const beta = svc('beta', ['10.2.0.1']);
      const { u, source } = await setup(t, harness, [alpha, beta]);
      await u.registry.start();
      const seen = record(u.registry);

      /** Applies one change to the source and returns the change events it caused, once settled. */
      const step = async (what: string, change: () => Promise<void>): Promise<ChangeSummary[]> => {
        seen.clear();
        await change();
        await until(() => assert.deepEqual(viewOf(u.registry.snapshot()), source.view()), what);
        await u.settled();
        assert.ok(seen.changes.length > 0, `${what}: a change event`);
        seen.checkEachAgainstSnapshots(what);
        const status = u.registry.status();
        assert.deepEqual(
          [status.stale, status.lastError],
          [false, undefined],
          `${what}: a change is no failure`,
        );
        return seen.changes.map(summary);
      };
      const only = (name: string, endpointsOnly: boolean) => ({
        hostnames: [u.hostname(name)],
        endpointsOnly,
      });

      /** Every event of a step is `expected` (and there is at least one, see step()). */
      const each = (events: ChangeSummary[], expected: ChangeSummary): ChangeSummary[] =>
        events.map(() => expected);

      const grown = await step('an endpoint added', () =>
        source.put({ ...alpha, addresses: ['10.1.0.1', '10.1.0.3'] }),
      );
      assert.deepEqual(grown, each(grown, only('alpha', true)), 'an endpoint added');
      const shrunk = await step('an endpoint removed', () =>
        source.put({ ...alpha, addresses: ['10.1.0.3'] }),
      );
      assert.deepEqual(shrunk, each(shrunk, only('alpha', true)), 'an endpoint removed');
      const redefined = await step('a port protocol changed', () =>
        source.put({ ...beta, protocol: 'HTTP' }),
      );
      assert.deepEqual(redefined, [only('beta', false)], 'a port protocol changed');

      // A source may write a service and its endpoints apart (the mock's API does), so the new
      // service is one of the events, not necessarily the last.
      const added = await step('a service added', () => source.put(svc('gamma', ['10.3.0.1'])));
      assert.ok(
        added.some((e) => !e.endpointsOnly),
        'a service added: announced as more than endpoints',
      );
      assert.deepEqual(
        added.map((e) => e.hostnames),
        added.map(() => [u.hostname('gamma')]),
        'a service added: gamma only',
      );
      const removed = await step('a service removed', () => source.remove('gamma'));
      assert.deepEqual(removed.at(-1), only('gamma', false), 'a service removed');
      assert.deepEqual(
        removed.map((e) => e.hostnames),
        removed.map(() => [u.hostname('gamma')]),
        'a service removed: gamma only',
      );
    });

    test('stop() ends every watch and timer: afterwards nothing reaches the source, no handle stays open, no event follows', async (t) => {
      const alpha = svc('alpha', ['10.1.0.1']);
      const { u, source, stop } = await setup(t, harness, [alpha]);
      const handlesBefore = openHandles();
      await u.registry.start();
      await u.settled();
      const seen = record(u.registry);
      const kept = viewOf(u.registry.snapshot());

      await stop();
      const activity = u.sourceActivity?.();
      await source.put({ ...alpha, addresses: ['10.1.0.1', '10.1.0.4'] });
      await source.put(svc('delta', ['10.4.0.1']));
      // No timer, socket or request of the registry's is left: nothing of it can run any more, so
      // what it did after stop has happened by then (instead of a wait that hopes so). Bounded by
      // twice quietMs, not the usual wait: a request left running (a Consul blocking read, say)
      // would outlast it.
      await eventually(() => assert.deepEqual(handlesBeyond(handlesBefore), [], 'handles left open'), {
        timeoutMs: 2 * harness.quietMs,
        what: 'the handles the registry opened to close',
      });
      assert.deepEqual(seen.changes, [], 'no change event after stop');
      assert.deepEqual(seen.syncs, [], 'no sync event after stop');
      assert.deepEqual(viewOf(u.registry.snapshot()), kept, 'the snapshot stays as it was');
      if (activity !== undefined)
        assert.equal(u.sourceActivity?.(), activity, 'nothing reached the source after stop');
    });
  });
}

// ---- fixtures ----

function svc(
  name: string,
  addresses: readonly string[],
  protocol: ContractService['protocol'] = 'GRPC',
): ContractService {
  return { name, protocol, addresses };
}

/** What the source holds, as the suite changed it. */
class SourceModel {
  private readonly held = new Map<string, ContractService>();

  constructor(
    private readonly u: RegistryUnderTest,
    seed: readonly ContractService[],
  ) {
    for (const s of seed) this.held.set(s.name, s);
  }

  async put(next: ContractService): Promise<void> {
    const before = this.held.get(next.name);
    await this.u.write(before ? { before, after: next } : { after: next });
    this.held.set(next.name, next);
  }

  async remove(name: string): Promise<void> {
    const before = this.held.get(name);
    if (before) await this.u.write({ before });
    this.held.delete(name);
  }

  /** What a registry in sync with the source publishes, in viewOf's terms. */
  view(): View {
    const view: View = {};
    for (const s of [...this.held.values()].sort((a, b) => compare(a.name, b.name)))
      view[this.u.hostname(s.name)] = { protocols: [s.protocol], addresses: [...s.addresses].sort() };
    return sorted(view);
  }
}

async function setup(
  t: TestContext,
  harness: RegistryHarness,
  seed: readonly ContractService[],
): Promise<{ u: RegistryUnderTest; source: SourceModel; stop: () => Promise<void> }> {
  const u = await harness.create(seed);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= u.registry.stop());
  t.after(async () => {
    await stop();
    await u.close();
  });
  return { u, source: new SourceModel(u, seed), stop };
}

/** A snapshot an earlier run stored: one service the live source does not have. */
function storedSnapshot(u: RegistryUnderTest): RegistrySnapshot {
  const host = u.hostname('stored');
  return {
    services: new Map([[host, service(host, [servicePort('web', 8080)], { registry: u.registry.name })]]),
    endpoints: new Map([[host, [endpoint('10.9.9.9', { web: 8080 })]]]),
  };
}

function assertRestored(registry: Registry, stored: RegistrySnapshot, when: string): void {
  assert.equal(registry.hasSynced(), true, `${when}: served at once`);
  assert.deepEqual(viewOf(registry.snapshot()), viewOf(stored), `${when}: the restored snapshot is in force`);
  assert.equal(registry.status().restoredFrom, STORED_AT, `${when}: status says where it came from`);
  assert.equal(registry.status().stale, true, `${when}: stale until a live sync`);
}

// ---- what the registry published ----

/** A snapshot reduced to what the contract's services differ in. */
type View = Record<string, { protocols: string[]; addresses: string[] }>;

function viewOf(snapshot: RegistrySnapshot): View {
  const view: View = {};
  // Endpoints left behind by a removed service show up too (with no protocols).
  for (const host of new Set([...snapshot.services.keys(), ...snapshot.endpoints.keys()])) {
    view[host] = {
      protocols: snapshot.services.get(host)?.ports.map((p) => p.protocol) ?? [],
      addresses: (snapshot.endpoints.get(host) ?? []).map((e) => e.address).sort(),
    };
  }
  return sorted(view);
}

interface ChangeSummary {
  readonly hostnames: string[];
  readonly endpointsOnly: boolean;
}

function summary(e: ChangeEvent): ChangeSummary {
  return { hostnames: [...changedHosts(e)].sort(), endpointsOnly: endpointsOnly(e) };
}

interface Recorded {
  readonly changes: ChangeEvent[];
  readonly syncs: SyncEvent['kind'][];
  clear(): void;
  /**
   * Every change event names exactly the hostnames whose service or endpoints differ between the
   * snapshots before and after it, and is endpointsOnly exactly when no service differs.
   */
  checkEachAgainstSnapshots(what: string): void;
}

function record(registry: Registry): Recorded {
  assert.equal(typeof registry.onSyncEvent, 'function', `${registry.name} reports sync events`);
  const changes: ChangeEvent[] = [];
  const syncs: SyncEvent['kind'][] = [];
  // The snapshot published before each event and the one it announces (published before listeners run).
  const around: { before: RegistrySnapshot; after: RegistrySnapshot }[] = [];
  let last = registry.snapshot();
  registry.onChange((e) => {
    changes.push(e);
    const now = registry.snapshot();
    around.push({ before: last, after: now });
    last = now;
  });
  registry.onSyncEvent?.((e) => syncs.push(e.kind));
  return {
    changes,
    syncs,
    clear() {
      changes.length = 0;
      syncs.length = 0;
      around.length = 0;
    },
    checkEachAgainstSnapshots(what) {
      changes.forEach((e, i) => {
        const step = around[i];
        assert.ok(step);
        const differing = new Set<string>();
        let serviceChanged = false;
        for (const host of new Set([...step.before.services.keys(), ...step.after.services.keys()])) {
          if (!same(step.before.services.get(host), step.after.services.get(host))) {
            differing.add(host);
            serviceChanged = true;
          }
        }
        for (const host of new Set([...step.before.endpoints.keys(), ...step.after.endpoints.keys()])) {
          if (!same(step.before.endpoints.get(host) ?? [], step.after.endpoints.get(host) ?? []))
            differing.add(host);
        }
        assert.deepEqual(
          summary(e),
          { hostnames: [...differing].sort(), endpointsOnly: !serviceChanged },
          `${what}: change event ${i + 1} against the snapshots around it`,
        );
      });
    },
  };
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

// ---- open handles ----

/** The resources keeping the event loop alive, by type (sockets, timers, watchers...). */
function openHandles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

function handlesBeyond(baseline: ReadonlyMap<string, number>): string[] {
  return [...openHandles()]
    .filter(([type, n]) => n > (baseline.get(type) ?? 0))
    .map(([type, n]) => `${type} ×${n - (baseline.get(type) ?? 0)}`);
}

// ---- small helpers ----

function sorted<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => compare(a, b)));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
