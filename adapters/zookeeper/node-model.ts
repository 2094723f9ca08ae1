// What the ZooKeeper registry knows of the nodes it mirrors, apart from the connection: per layout,
// each group's nodes as last parsed and the hostnames they make; which layout owns a hostname;
// services remembered (without endpoints) while a group they came from exists; and the node
// problems found on the way. The registry (registry.ts) names the groups that changed and the
// hostnames to resolve; this recomputes only those, reusing what an unchanged node parsed to.
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import type { Logger } from '../../log/logger.js';
import { assembleServices, type AssembledService } from './conversion.js';
import type { NodeProblem, ParseResult, ZkInstance } from './instance.js';
import type { Layout } from './layouts.js';
import type { LayoutName } from './flags.js';
import type { Mirror } from './tree-watcher.js';

/** A service seen with instances, kept (empty) while a group it came from still exists. */
interface Remembered {
  readonly layout: LayoutName;
  readonly groups: ReadonlySet<string>;
  readonly service: Service;
}

/** One group's nodes as last parsed. */
interface GroupRead {
  /** leaf → its data and what the layout's parser made of it (reused while the data is the same). */
  readonly parsed: ReadonlyMap<string, { data: string | undefined; result: ParseResult }>;
  /** hostname → this group's instances of it. */
  readonly instances: ReadonlyMap<string, ZkInstance[]>;
  readonly disabled: number;
  readonly problems: readonly NodeProblem[];
}

/** What the registry keeps per layout between publishes. */
interface LayoutState {
  readonly groups: Map<string, GroupRead>;
  /** hostname → group → that group's instances of it. */
  readonly byHost: Map<string, Map<string, ZkInstance[]>>;
  /** hostname → its last assembly (reused while built from the same instance objects). */
  readonly assembled: Map<string, AssembledService>;
  /** group → the hostnames remembered from it. */
  readonly rememberedByGroup: Map<string, Set<string>>;
}

function emptyLayoutState(): LayoutState {
  return { groups: new Map(), byHost: new Map(), assembled: new Map(), rememberedByGroup: new Map() };
}

export class ZkNodeModel {
  private readonly remembered = new Map<string, Remembered>();
  private readonly layoutStates: LayoutState[];
  /** Node problems: per `layout/group` (parsing), per hostname (assembly, collisions). */
  private readonly groupProblems = new Map<string, readonly NodeProblem[]>();
  private readonly hostProblems = new Map<string, readonly NodeProblem[]>();
  private disabledCount = 0;

  constructor(
    private readonly layouts: readonly Layout[],
    /** The registry's name, which assembled services carry. */
    private readonly registryName: string,
    private readonly logger: Logger,
  ) {
    this.layoutStates = layouts.map(() => emptyLayoutState());
  }

  /** Instances whose node marks them disabled, over every layout. */
  get disabled(): number {
    return this.disabledCount;
  }

  /**
   * Parses layout `index`'s groups again from `mirror`: the `dirty` ones, or with `full` every group
   * known before or mirrored now. Adds the hostnames they touched (before or now) to `hosts`.
   */
  readLayout(
    index: number,
    mirror: Mirror,
    dirty: ReadonlySet<string>,
    full: boolean,
    hosts: Set<string>,
  ): void {
    const layout = this.layouts[index];
    const state = this.layoutStates[index];
    if (!layout || !state) return;
    const groups = full ? new Set([...state.groups.keys(), ...mirror.keys()]) : dirty;
    for (const group of groups) this.readGroup(layout, state, group, mirror.get(group), hosts);
  }

  /** Parses one group's nodes again (an unchanged node's result is reused); adds the hosts it touches. */
  private readGroup(
    layout: Layout,
    state: LayoutState,
    group: string,
    leaves: ReadonlyMap<string, string | undefined> | undefined,
    hosts: Set<string>,
  ): void {
    const before = state.groups.get(group);
    for (const host of before?.instances.keys() ?? []) hosts.add(host);
    for (const host of state.rememberedByGroup.get(group) ?? []) hosts.add(host);
    for (const host of before?.instances.keys() ?? []) {
      const byGroup = state.byHost.get(host);
      byGroup?.delete(group);
      if (byGroup?.size === 0) state.byHost.delete(host);
    }
    this.disabledCount -= before?.disabled ?? 0;
    const problemKey = `${layout.name}/${group}`;
    if (!leaves) {
      state.groups.delete(group);
      this.setProblems(this.groupProblems, problemKey, []);
      return;
    }
    const parsed = new Map<string, { data: string | undefined; result: ParseResult }>();
    const instances = new Map<string, ZkInstance[]>();
    const problems: NodeProblem[] = [];
    let disabled = 0;
    for (const [leaf, data] of leaves) {
      const path = `${layout.leavesPath(group)}/${leaf}`;
      const cached = before?.parsed.get(leaf);
      const result = cached && cached.data === data ? cached.result : layout.parse(group, leaf, data);
      parsed.set(leaf, { data, result });
      if (result.kind === 'instance') {
        const list = instances.get(result.instance.hostname) ?? [];
        list.push(result.instance);
        instances.set(result.instance.hostname, list);
      } else if (result.kind === 'disabled') disabled++;
      else problems.push({ layout: layout.name, path, reason: result.reason });
    }
    state.groups.set(group, { parsed, instances, disabled, problems });
    this.disabledCount += disabled;
    this.setProblems(this.groupProblems, problemKey, problems);
    for (const [host, list] of instances) {
      hosts.add(host);
      const byGroup = state.byHost.get(host) ?? new Map<string, ZkInstance[]>();
      byGroup.set(group, list);
      state.byHost.set(host, byGroup);
    }
  }

  /**
   * What `host` serves: layout by layout, its instances assembled (the first layout with any owns
   * the hostname; the others' instances are reported), else the service remembered from that layout
   * while one of its groups exists (with no endpoints).
   */
  resolveHost(host: string): { service: Service; endpoints: readonly Endpoint[] } | undefined {
    let owner: { layout: LayoutName; service: Service; endpoints: readonly Endpoint[] } | undefined;
    const problems: NodeProblem[] = [];
    this.layouts.forEach((layout, i) => {
      const state = this.layoutStates[i];
      if (!state) return;
      const instances = [...(state.byHost.get(host)?.values() ?? [])].flat();
      let assembled: AssembledService | undefined;
      if (instances.length === 0) state.assembled.delete(host);
      else {
        const assembly = assembleServices(instances, this.registryName, state.assembled);
        assembled = assembly.services.get(host);
        problems.push(...assembly.problems);
        if (assembled) state.assembled.set(host, assembled);
        else state.assembled.delete(host);
      }
      if (assembled) {
        if (owner) {
          const reason = `hostname ${host} is already defined by the ${owner.layout} layout`;
          for (const instance of assembled.instances)
            problems.push({ layout: layout.name, path: instance.path, reason });
          return;
        }
        owner = { layout: layout.name, service: assembled.service, endpoints: assembled.endpoints };
        this.remember(host, { layout: layout.name, groups: assembled.groups, service: assembled.service });
        return;
      }
      // A service whose last instance went away has no endpoints; it stays while its node does.
      const memory = this.remembered.get(host);
      if (memory?.layout !== layout.name) return;
      if (![...memory.groups].some((g) => state.groups.has(g))) {
        this.remember(host, undefined);
        return;
      }
      owner ??= { layout: layout.name, service: memory.service, endpoints: [] };
    });
    this.setProblems(this.hostProblems, host, problems);
    return owner;
  }

  /** Sets (or, undefined, forgets) what is remembered of `host`, keeping the group index. */
  private remember(host: string, memory: Remembered | undefined): void {
    const before = this.remembered.get(host);
    if (before) {
      const index =
        this.layoutStates[this.layouts.findIndex((l) => l.name === before.layout)]?.rememberedByGroup;
      for (const group of before.groups) {
        const set = index?.get(group);
        set?.delete(host);
        if (set?.size === 0) index?.delete(group);
      }
    }
    if (!memory) {
      this.remembered.delete(host);
      return;
    }
    this.remembered.set(host, memory);
    const index =
      this.layoutStates[this.layouts.findIndex((l) => l.name === memory.layout)]?.rememberedByGroup;
    for (const group of memory.groups) {
      const set = index?.get(group) ?? new Set<string>();
      set.add(host);
      index?.set(group, set);
    }
  }

  /** Replaces one key's problems, logging each that is new (or whose reason changed). */
  private setProblems(
    map: Map<string, readonly NodeProblem[]>,
    key: string,
    problems: readonly NodeProblem[],
  ): void {
    const before = new Map((map.get(key) ?? []).map((p) => [p.path, p.reason]));
    for (const p of problems) {
      if (before.get(p.path) !== p.reason) {
        this.logger.warn({ layout: p.layout, path: p.path, reason: p.reason }, 'skipping ZooKeeper node');
      }
    }
    if (problems.length > 0) map.set(key, problems);
    else map.delete(key);
  }

  /** Every current node problem, in path order (for debug(); not on the publish path). */
  problemList(): NodeProblem[] {
    const all = [...this.groupProblems.values(), ...this.hostProblems.values()].flat();
    return all.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  problemCount(): number {
    let count = 0;
    for (const list of this.groupProblems.values()) count += list.length;
    for (const list of this.hostProblems.values()) count += list.length;
    return count;
  }
}
