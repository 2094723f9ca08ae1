// The two ZooKeeper layouts Portolan reads. Both are two levels deep under a root — groups (Curator
// service names, Dubbo interfaces), then the instances of each group — so one tree watcher serves both;
// a layout says where the levels are, whether instance data must be read, and how to parse a node.
import { parseCuratorInstance } from './curator.js';
import { parseDubboProvider } from './dubbo.js';
import type { ParseResult } from './instance.js';
import type { LayoutName, ZooKeeperOptions } from './flags.js';

export interface TreeShape {
  /** Its children are the groups. */
  readonly root: string;
  /** Where a group's instances are listed. */
  leavesPath(group: string): string;
  /** Whether instance nodes carry the data (Curator) or only their name does (Dubbo). */
  readonly readsData: boolean;
}

export interface Layout extends TreeShape {
  readonly name: LayoutName;
  /** `data` is the node's UTF-8 content when `readsData`, else undefined. */
  parse(group: string, leaf: string, data: string | undefined): ParseResult;
}

export function curatorLayout(base: string, suffix: string): Layout {
  const leavesPath = (group: string): string => `${base}/${group}`;
  return {
    name: 'curator',
    root: base,
    leavesPath,
    readsData: true,
    parse: (group, leaf, data) =>
      parseCuratorInstance(data, { name: group, path: `${leavesPath(group)}/${leaf}`, suffix }),
  };
}

export function dubboLayout(root: string, suffix: string): Layout {
  const leavesPath = (group: string): string => `${root}/${group}/providers`;
  return {
    name: 'dubbo',
    root,
    leavesPath,
    readsData: false,
    parse: (group, leaf) => parseDubboProvider(leaf, { group, path: `${leavesPath(group)}/${leaf}`, suffix }),
  };
}

export function layoutsFor(options: ZooKeeperOptions): Layout[] {
  return options.layouts.map((name) =>
    name === 'curator'
      ? curatorLayout(options.curatorBase, options.curatorSuffix)
      : dubboLayout(options.dubboRoot, options.dubboSuffix),
  );
}
