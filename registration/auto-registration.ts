// Auto-registration: VMs whose agent connects with `--group NAME` become WorkloadEntries built from
// that WorkloadGroup, for as long as the agent is connected and a grace period after (so a reconnect
// does not flap the endpoint), then they are removed. Registrations are stored, so a control-plane
// restart keeps them (each given a fresh grace) until their agents reconnect.
//
// Level-triggered: the entries are recomputed from the registrations and the groups in force, so a
// group's edit updates its entries, and a deleted group's entries go (and come back if it returns
// while its VMs are still connected). Several streams may claim one entry at once (an agent's
// reconnect racing its old stream, a second process with the same identity): the newest holds it,
// and when it leaves while an older one is still connected, the older one holds it again — the
// entry is never removed (nor its grace started) while any stream claiming it is open. The control
// plane learns of agent streams through the ADS
// server's observer seam (cli/ wires it); nothing here knows about xDS.
import type { Logger } from '../log/logger.js';
import { systemClock, type Clock } from '../model/clock.js';
import { Listeners } from '../model/listeners.js';
import type { WorkloadEntryResource, WorkloadGroupResource } from '../mesh/types.js';
import type { WorkloadEntrySource } from '../mesh/workload-entries.js';
import { buildEntry, registrationKey, type ProbeHealth, type Registration } from './entry.js';

/** What an agent's stream claims, after the secure port verified who it is. */
export interface AgentClaim {
  readonly nodeId: string;
  readonly group: string;
  /** The agent's namespace and service account (its certificate's). */
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Its verified SPIFFE ID; undefined on a connection without one (the plaintext port). */
  readonly identity: string | undefined;
  /** `--instance-ip`, else the address the connection comes from. */
  readonly address: string;
}

/** Where registrations are kept across restarts (store/auto-registrations.ts, by key). */
export interface RegistrationStore {
  all(): readonly { readonly key: string; readonly value: string }[];
  put(key: string, value: string): void;
  delete(key: string): void;
}

export interface AutoRegistrationOptions {
  /** The WorkloadGroups in force (the mesh config's). */
  readonly groups: () => readonly WorkloadGroupResource[];
  /** How long an entry outlives its agent's connection (`serve --auto-registration-grace`). */
  readonly graceMs: number;
  readonly store?: RegistrationStore;
  readonly logger: Logger;
  /** Registrations kept at most (a bound on what agents can make the control plane hold). */
  readonly maxEntries?: number;
  /** The grace timers and the times shown (default: the system clock; tests pass a manual one). */
  readonly clock?: Clock;
}

export type ConnectionState = 'connected' | 'disconnected';

interface Held {
  registration: Registration;
  state: ConnectionState;
  /** The stream holding it while connected. */
  connection: string | undefined;
  /** Every open stream claiming it, oldest first, with what each claims (the last is `connection`). */
  readonly claimants: Map<string, Registration>;
  since: string;
  /** Cancels the grace timer, while one runs. */
  cancelGrace: (() => void) | undefined;
}

/** One row of /debug/registryz's `autoRegistered`. */
export interface RegistrationView {
  readonly entry: string;
  readonly group: string;
  readonly address: string;
  readonly node: string;
  readonly state: ConnectionState;
  readonly since: string;
  /** While disconnected: when the entry goes unless the agent is back. */
  readonly removeAt?: string;
  /** 'HEALTHY', 'UNHEALTHY' (with `reason`), or 'UNKNOWN' before a probing group's first report. */
  readonly health: 'HEALTHY' | 'UNHEALTHY' | 'UNKNOWN';
  readonly reason?: string;
  /** False when its group is gone: no entry is made until it returns. */
  readonly groupExists: boolean;
  /** The replica holding it, when another replica of a shared store does (docs/ha.md). */
  readonly replica?: string;
}

/** A registration another replica holds (read from the shared store). */
export interface SharedRegistration {
  readonly key: string;
  readonly value: string;
  readonly replica: string;
}

export class AutoRegistration implements WorkloadEntrySource {
  private readonly held = new Map<string, Held>();
  /** Stream id → the key it holds. */
  private readonly byConnection = new Map<string, string>();
  private readonly listeners = new Listeners<void>();
  private entries: readonly WorkloadEntryResource[] = [];
  /** Registrations other replicas hold, by key (with a shared store; empty otherwise). */
  private elsewhere = new Map<string, { registration: Registration; replica: string }>();

  private readonly clock: Clock;

  constructor(private readonly options: AutoRegistrationOptions) {
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Registrations stored by an earlier run, each disconnected with a fresh grace: the agents have
   * that long to reconnect to this control plane.
   */
  restore(): number {
    const stored = this.options.store?.all() ?? [];
    let restored = 0;
    for (const { key, value } of stored) {
      const registration = parseStored(value);
      if (!registration || registrationKey(registration) !== key) {
        this.options.logger.warn({ key }, 'auto-registration: unreadable stored registration dropped');
        this.options.store?.delete(key);
        continue;
      }
      const held: Held = {
        registration,
        state: 'disconnected',
        connection: undefined,
        claimants: new Map(),
        since: this.isoNow(),
        cancelGrace: undefined,
      };
      this.held.set(key, held);
      this.startGrace(key, held);
      restored += 1;
    }
    if (restored > 0) {
      this.options.logger.info({ registrations: restored }, 'auto-registration: restored from the store');
      this.recompute();
    }
    return restored;
  }

  /** Why `claim` may not register; undefined when it may. */
  refusal(claim: AgentClaim): string | undefined {
    const group = this.findGroup(claim.namespace, claim.group);
    const name = `WorkloadGroup ${claim.namespace}/${claim.group}`;
    if (!claim.identity)
      return `auto-registration into ${name} needs a verified workload certificate: connect to the secure port`;
    if (!group) return `${name} does not exist`;
    const wanted = group.spec.template?.serviceAccount;
    if (wanted && wanted !== claim.serviceAccount)
      return `${name} is for service account ${wanted}, but this agent is ${claim.identity}`;
    const max = this.options.maxEntries ?? 10_000;
    const key = registrationKey(claim);
    if (!this.held.has(key) && this.held.size >= max)
      return `auto-registration holds its maximum of ${max} entries`;
    return undefined;
  }

  /** The agent's stream `connection` was admitted (`refusal` said yes): its entry exists from now on. */
  connected(connection: string, claim: AgentClaim): void {
    const key = registrationKey(claim);
    const previous = this.held.get(key);
    previous?.cancelGrace?.();
    const claimants = previous?.claimants ?? new Map<string, Registration>();
    const registration: Registration = {
      group: claim.group,
      namespace: claim.namespace,
      address: claim.address,
      nodeId: claim.nodeId,
      serviceAccount: claim.serviceAccount,
      // A reconnect keeps the last report until the agent sends a new one.
      ...(previous?.registration.health && { health: previous.registration.health }),
    };
    claimants.delete(connection);
    claimants.set(connection, registration);
    this.held.set(key, {
      registration,
      state: 'connected',
      connection,
      claimants,
      since: this.isoNow(),
      cancelGrace: undefined,
    });
    this.byConnection.set(connection, key);
    this.save(key, registration);
    this.options.logger.info(
      { entry: key, node: claim.nodeId, group: claim.group, reconnect: previous !== undefined },
      'auto-registration: VM registered',
    );
    this.recompute();
  }

  /** The stream ended: the entry stays for the grace period, then goes unless the agent is back. */
  disconnected(connection: string): void {
    const key = this.byConnection.get(connection);
    if (key === undefined) return;
    this.byConnection.delete(connection);
    const held = this.held.get(key);
    if (!held) return;
    held.claimants.delete(connection);
    if (held.connection !== connection) return;
    const older = [...held.claimants].pop();
    if (older) {
      // The newest holder left; an older stream claiming the entry is still open: it holds it again.
      const [next, registration] = older;
      held.connection = next;
      held.registration = registration;
      held.since = this.isoNow();
      this.save(key, registration);
      this.options.logger.info(
        { entry: key, node: registration.nodeId, left: connection },
        'auto-registration: the newest holder left; an older connected one holds the entry again',
      );
      this.recompute();
      return;
    }
    held.state = 'disconnected';
    held.connection = undefined;
    held.since = this.isoNow();
    this.startGrace(key, held);
    this.options.logger.info(
      { entry: key, node: held.registration.nodeId, graceMs: this.options.graceMs },
      'auto-registration: agent disconnected; entry kept for the grace period',
    );
  }

  /** A probe result the agent on `connection` reported. */
  reportHealth(connection: string, healthy: boolean, message: string): void {
    const key = this.byConnection.get(connection);
    const held = key === undefined ? undefined : this.held.get(key);
    if (!held || key === undefined) return;
    const own = held.claimants.get(connection);
    if (own && held.connection !== connection) {
      // An older claimant's report: kept for when it holds the entry again, not applied now.
      held.claimants.set(connection, { ...own, health: { healthy, message, at: this.isoNow() } });
      return;
    }
    const before = held.registration.health;
    if (before && before.healthy === healthy && before.message === message) return;
    const health: ProbeHealth = { healthy, message, at: this.isoNow() };
    held.registration = { ...held.registration, health };
    held.claimants.set(connection, held.registration);
    this.save(key, held.registration);
    this.options.logger.info(
      { entry: key, node: held.registration.nodeId, healthy, ...(message && { reason: message }) },
      healthy ? 'auto-registration: VM healthy' : 'auto-registration: VM unhealthy',
    );
    if (before?.healthy !== healthy) this.recompute();
  }

  /**
   * What the other replicas hold now (a shared store's rows, this replica's own left out): their
   * VMs are entries here too, so clients of any replica see them. The rows' owners and the leader
   * remove them when their grace is over.
   */
  setShared(rows: readonly SharedRegistration[]): void {
    const next = new Map<string, { registration: Registration; replica: string }>();
    for (const row of rows) {
      const registration = parseStored(row.value);
      if (registration && registrationKey(registration) === row.key)
        next.set(row.key, { registration, replica: row.replica });
    }
    const same =
      next.size === this.elsewhere.size &&
      [...next].every(
        ([k, v]) =>
          this.elsewhere.get(k)?.replica === v.replica &&
          JSON.stringify(this.elsewhere.get(k)?.registration) === JSON.stringify(v.registration),
      );
    if (same) return;
    this.elsewhere = next;
    this.recompute();
  }

  /** The groups changed: entries follow their templates, and go with their group. */
  groupsChanged(): void {
    this.recompute();
  }

  workloadEntries(): readonly WorkloadEntryResource[] {
    return this.entries;
  }

  onWorkloadEntriesChange(listener: () => void): () => void {
    return this.listeners.add(listener);
  }

  list(): RegistrationView[] {
    const local = this.localList();
    const remote = [...this.elsewhere]
      .filter(([key]) => !this.held.has(key))
      .map(([key, { registration: r, replica }]): RegistrationView => {
        const group = this.findGroup(r.namespace, r.group);
        const report = r.health;
        const health = report
          ? report.healthy
            ? 'HEALTHY'
            : 'UNHEALTHY'
          : group?.spec.probe
            ? 'UNKNOWN'
            : 'HEALTHY';
        return {
          entry: key,
          group: r.group,
          address: r.address,
          node: r.nodeId,
          state: 'connected',
          since: report?.at ?? '',
          health,
          ...(report && !report.healthy && { reason: report.message }),
          groupExists: group !== undefined,
          replica,
        };
      });
    return [...local, ...remote].sort((a, b) => (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0));
  }

  private localList(): RegistrationView[] {
    return [...this.held.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, h]) => {
        const group = this.findGroup(h.registration.namespace, h.registration.group);
        const probing = group?.spec.probe !== undefined;
        const report = h.registration.health;
        const health = report ? (report.healthy ? 'HEALTHY' : 'UNHEALTHY') : probing ? 'UNKNOWN' : 'HEALTHY';
        return {
          entry: key,
          group: h.registration.group,
          address: h.registration.address,
          node: h.registration.nodeId,
          state: h.state,
          since: h.since,
          ...(h.state === 'disconnected' && {
            removeAt: new Date(Date.parse(h.since) + this.options.graceMs).toISOString(),
          }),
          health,
          ...(report && !report.healthy && { reason: report.message }),
          groupExists: group !== undefined,
        };
      });
  }

  stop(): void {
    for (const h of this.held.values()) h.cancelGrace?.();
  }

  private startGrace(key: string, held: Held): void {
    held.cancelGrace?.();
    held.cancelGrace = this.clock.after(
      this.options.graceMs,
      () => {
        held.cancelGrace = undefined;
        if (this.held.get(key) !== held || held.state !== 'disconnected') return;
        this.held.delete(key);
        this.options.store?.delete(key);
        this.options.logger.info(
          { entry: key, node: held.registration.nodeId },
          'auto-registration: grace period over; entry removed',
        );
        this.recompute();
      },
      { unref: true },
    );
  }

  private isoNow(): string {
    return new Date(this.clock.now()).toISOString();
  }

  private findGroup(namespace: string, name: string): WorkloadGroupResource | undefined {
    return this.options.groups().find((g) => g.namespace === namespace && g.name === name);
  }

  private save(key: string, registration: Registration): void {
    this.options.store?.put(key, JSON.stringify(registration));
  }

  private recompute(): void {
    const next: WorkloadEntryResource[] = [];
    const registrations = [...this.held.values()].map((h) => h.registration);
    for (const [key, { registration }] of this.elsewhere)
      if (!this.held.has(key)) registrations.push(registration);
    for (const r of registrations) {
      const group = this.findGroup(r.namespace, r.group);
      if (group) next.push(buildEntry(r, group));
    }
    next.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (JSON.stringify(next) === JSON.stringify(this.entries)) return;
    this.entries = next;
    this.listeners.emit();
  }
}

function parseStored(text: string): Registration | undefined {
  try {
    const r = JSON.parse(text) as Partial<Registration>;
    const strings = [r.group, r.namespace, r.address, r.nodeId, r.serviceAccount];
    if (strings.some((s) => typeof s !== 'string' || s === '')) return undefined;
    return r as Registration;
  } catch {
    return undefined;
  }
}
