// The zookeeper registry's settings: the `--zk-*` flags, their defaults, and their validation.
// Every bad value is an OptionError naming the flag, so `portolan serve` fails before connecting.
import { OptionError, parseDurationMs } from '../option-values.js';
import { DEFAULT_VANISH_HOLD } from '../vanish-hold.js';

export const LAYOUT_NAMES = ['curator', 'dubbo'] as const;
export type LayoutName = (typeof LAYOUT_NAMES)[number];

export interface ZooKeeperOptions {
  /** node-zookeeper-client connection string: `host:port,host:port[/chroot]`. */
  readonly hosts: string;
  readonly sessionTimeoutMs: number;
  /** Layouts to read, in order; the first one to produce a hostname keeps it. */
  readonly layouts: readonly LayoutName[];
  /** Curator x-discovery base path: instances live at BASE/NAME/ID. */
  readonly curatorBase: string;
  /** Curator services are named NAME.SUFFIX. */
  readonly curatorSuffix: string;
  /** Dubbo's root (its registry `group`): providers live at ROOT/INTERFACE/providers/URL. */
  readonly dubboRoot: string;
  /** Appended to the Dubbo hostname as `.SUFFIX`; empty keeps dubbo2istio's hostname as is. */
  readonly dubboSuffix: string;
  /**
   * How long a service whose every endpoint vanished right after a reconnect keeps its last
   * endpoints (adapters/vanish-hold.ts); 0 turns the hold off. Default 5 minutes.
   */
  readonly emptyHoldMs?: number;
}

/** The flag defaults, as strings (what commander shows in --help). */
export const ZK_FLAG_DEFAULTS = {
  zkHosts: '127.0.0.1:2181',
  zkSessionTimeout: '15s',
  zkLayouts: 'curator,dubbo',
  zkCuratorBase: '/services',
  zkCuratorSuffix: 'service.zk',
  zkDubboRoot: '/dubbo',
  zkDubboSuffix: '',
  zkEmptyHold: DEFAULT_VANISH_HOLD,
} as const;

/** The longest --zk-empty-hold: a day; beyond, a dead endpoint is served too long to be a guard. */
const MAX_EMPTY_HOLD_MS = 24 * 3600_000;

// ZooKeeper servers negotiate the timeout into [2, 20] ticks; beyond these bounds a value is a typo.
const MIN_SESSION_TIMEOUT_MS = 100;
const MAX_SESSION_TIMEOUT_MS = 600_000;

/** Reads and validates the `--zk-*` flags (commander's camelCase keys); missing ones take the defaults. */
export function parseZooKeeperFlags(flags: Readonly<Record<string, unknown>>): ZooKeeperOptions {
  const text = (key: keyof typeof ZK_FLAG_DEFAULTS): string => {
    const value = flags[key] ?? ZK_FLAG_DEFAULTS[key];
    if (typeof value !== 'string') throw new OptionError(`${flagName(key)}: expected a string`);
    return value.trim();
  };
  const sessionTimeoutMs = parseDurationMs(text('zkSessionTimeout'), '--zk-session-timeout');
  if (sessionTimeoutMs < MIN_SESSION_TIMEOUT_MS || sessionTimeoutMs > MAX_SESSION_TIMEOUT_MS) {
    throw new OptionError('--zk-session-timeout: must be between 100ms and 10m');
  }
  return {
    hosts: parseHosts(text('zkHosts')),
    sessionTimeoutMs,
    layouts: parseLayouts(text('zkLayouts')),
    curatorBase: parseZnodePath(text('zkCuratorBase'), '--zk-curator-base'),
    curatorSuffix: parseSuffix(text('zkCuratorSuffix'), '--zk-curator-suffix', false),
    dubboRoot: parseZnodePath(text('zkDubboRoot'), '--zk-dubbo-root'),
    dubboSuffix: parseSuffix(text('zkDubboSuffix'), '--zk-dubbo-suffix', true),
    emptyHoldMs: parseEmptyHold(text('zkEmptyHold'), '--zk-empty-hold'),
  };
}

/** A hold duration between 0 (off) and a day. */
export function parseEmptyHold(value: string, flag: string): number {
  const ms = parseDurationMs(value, flag);
  if (ms > MAX_EMPTY_HOLD_MS) throw new OptionError(`${flag}: at most 24h, got "${value}"`);
  return ms;
}

function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** `host[:port],…[/chroot]`. IPv6 literals are refused: node-zookeeper-client splits on `:`. */
export function parseHosts(text: string): string {
  const slash = text.indexOf('/');
  const list = slash === -1 ? text : text.slice(0, slash);
  const chroot = slash === -1 ? '' : text.slice(slash);
  const servers = list.split(',').map((s) => s.trim());
  if (servers.length === 0 || servers.some((s) => s === '')) {
    throw new OptionError(`--zk-hosts: expected host:port[,host:port…][/chroot], got "${text}"`);
  }
  for (const server of servers) {
    const m = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(server);
    const port = m?.[2] === undefined ? 2181 : Number(m[2]);
    if (!m || port < 1 || port > 65535) {
      throw new OptionError(`--zk-hosts: "${server}" is not host:port (IPv6 literals are not supported)`);
    }
  }
  if (chroot !== '' && chroot !== '/') parseZnodePath(chroot, '--zk-hosts chroot');
  return servers.join(',') + (chroot === '/' ? '' : chroot);
}

function parseLayouts(text: string): LayoutName[] {
  const names = text
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (names.length === 0) throw new OptionError('--zk-layouts: name at least one of curator, dubbo');
  for (const name of names) {
    if (!(LAYOUT_NAMES as readonly string[]).includes(name)) {
      throw new OptionError(`--zk-layouts: unknown layout "${name}" (known: ${LAYOUT_NAMES.join(', ')})`);
    }
  }
  if (new Set(names).size !== names.length) throw new OptionError('--zk-layouts: a layout is named twice');
  return names as LayoutName[];
}

/** An absolute znode path below the root: `/a/b`, no trailing slash, no `.`/`..` segments. */
export function parseZnodePath(text: string, flag: string): string {
  const segments = text.split('/').slice(1);
  const ok =
    text.startsWith('/') &&
    segments.length > 0 &&
    segments.every((s) => s !== '' && s !== '.' && s !== '..' && !/[\u0000-\u001f\u007f]/.test(s));
  if (!ok) throw new OptionError(`${flag}: expected an absolute znode path like /services, got "${text}"`);
  return text;
}

const DNS_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

function parseSuffix(text: string, flag: string, allowEmpty: boolean): string {
  const suffix = text.replace(/^\./, '').toLowerCase();
  if (suffix === '' && allowEmpty) return '';
  if (!DNS_NAME.test(suffix))
    throw new OptionError(`${flag}: expected a DNS suffix like service.zk, got "${text}"`);
  return suffix;
}
