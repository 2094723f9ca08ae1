// The `--consul-*` flags of `portolan serve`: declared on the command, then checked and compiled into
// the settings the registry runs with. A bad value is an OptionError naming the flag.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { OptionError, parseDurationMs } from '../option-values.js';
import { DEFAULT_VANISH_HOLD } from '../vanish-hold.js';

export const CONSUL_DEFAULTS = {
  consulAddr: 'http://127.0.0.1:8500',
  consulDomain: 'service.consul',
  consulWait: '60s',
  consulWarningHealthy: 'true',
  consulEmptyHold: DEFAULT_VANISH_HOLD,
  consulSyncTimeout: '30s',
} as const;

/** Bounds of --consul-empty-hold (0: off) and --consul-sync-timeout. */
const MAX_EMPTY_HOLD_MS = 24 * 3600_000;
const MAX_SYNC_TIMEOUT_MS = 3600_000;

/** Consul caps a blocking query's wait at 10 minutes. */
const MAX_WAIT_MS = 10 * 60_000;

export interface ConsulSettings {
  readonly url: URL;
  readonly token?: string;
  readonly datacenter?: string;
  readonly tls?: { readonly ca?: Buffer; readonly cert?: Buffer; readonly key?: Buffer };
  readonly domain: string;
  readonly warningHealthy: boolean;
  readonly waitMs: number;
  /** How long a listed service that answers with no instances keeps its last ones. */
  readonly emptyHoldMs: number;
  /** How long the first sync waits for every listed service before it goes ahead without the missing ones. */
  readonly syncTimeoutMs: number;
}

export function addConsulFlags(command: Command): void {
  command
    .option('--consul-addr <url>', 'Consul HTTP API (http:// or https://)', CONSUL_DEFAULTS.consulAddr)
    .option('--consul-token <token>', 'Consul ACL token (default: $CONSUL_HTTP_TOKEN)')
    .option('--consul-datacenter <dc>', "datacenter to read (default: the agent's)")
    .option('--consul-ca-file <file>', 'PEM CA bundle to verify Consul (https)')
    .option('--consul-cert-file <file>', 'PEM client certificate for Consul (https, with --consul-key-file)')
    .option('--consul-key-file <file>', 'PEM client key for Consul (https, with --consul-cert-file)')
    .option(
      '--consul-domain <domain>',
      'Consul services are served as NAME.<domain>',
      CONSUL_DEFAULTS.consulDomain,
    )
    .option(
      '--consul-warning-healthy [bool]',
      'instances whose worst check is "warning" take traffic (true) or not (false)',
      CONSUL_DEFAULTS.consulWarningHealthy,
    )
    .option(
      '--consul-wait <duration>',
      'blocking-query wait: longest a watch waits for a change before re-arming (max 10m)',
      CONSUL_DEFAULTS.consulWait,
    )
    .option(
      '--consul-empty-hold <duration>',
      'a listed service that answers with no instances keeps its last ones, stale, this long (0: off; max 24h)',
      CONSUL_DEFAULTS.consulEmptyHold,
    )
    .option(
      '--consul-sync-timeout <duration>',
      'at start, longest wait for every listed service to answer; then ready without the ones that did not (reported in /ready)',
      CONSUL_DEFAULTS.consulSyncTimeout,
    );
}

export function parseConsulFlags(
  flags: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConsulSettings {
  const url = parseAddr(text(flags.consulAddr) ?? CONSUL_DEFAULTS.consulAddr);
  const token = text(flags.consulToken) ?? (env.CONSUL_HTTP_TOKEN || undefined);
  const datacenter = text(flags.consulDatacenter);
  if (datacenter !== undefined && !/^[A-Za-z0-9_.-]+$/.test(datacenter))
    throw new OptionError(`--consul-datacenter: "${datacenter}" is not a datacenter name`);
  const tls = parseTls(flags, url);
  return {
    url,
    ...(token && { token }),
    ...(datacenter && { datacenter }),
    ...(tls && { tls }),
    domain: parseDomain(text(flags.consulDomain) ?? CONSUL_DEFAULTS.consulDomain),
    warningHealthy: parseBool(flags.consulWarningHealthy ?? CONSUL_DEFAULTS.consulWarningHealthy),
    waitMs: parseWait(text(flags.consulWait) ?? CONSUL_DEFAULTS.consulWait),
    emptyHoldMs: parseBounded(
      text(flags.consulEmptyHold) ?? CONSUL_DEFAULTS.consulEmptyHold,
      '--consul-empty-hold',
      0,
      MAX_EMPTY_HOLD_MS,
    ),
    syncTimeoutMs: parseBounded(
      text(flags.consulSyncTimeout) ?? CONSUL_DEFAULTS.consulSyncTimeout,
      '--consul-sync-timeout',
      1,
      MAX_SYNC_TIMEOUT_MS,
    ),
  };
}

function parseBounded(value: string, flag: string, minMs: number, maxMs: number): number {
  const ms = parseDurationMs(value, flag);
  if (ms < minMs || ms > maxMs)
    throw new OptionError(`${flag}: between ${minMs}ms and ${maxMs / 60_000}m, got "${value}"`);
  return ms;
}

/** `http(s)://host:port`; a bare `host:port` means http, as Consul's own CONSUL_HTTP_ADDR does. */
function parseAddr(value: string): URL {
  let url: URL;
  try {
    url = new URL(value.includes('://') ? value : `http://${value}`);
  } catch {
    throw new OptionError(`--consul-addr: expected a URL like http://127.0.0.1:8500, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OptionError(`--consul-addr: use http:// or https://, got "${value}"`);
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.username)
    throw new OptionError(`--consul-addr: give only scheme, host and port, got "${value}"`);
  return url;
}

function parseTls(flags: Readonly<Record<string, unknown>>, url: URL): ConsulSettings['tls'] {
  const caFile = text(flags.consulCaFile);
  const certFile = text(flags.consulCertFile);
  const keyFile = text(flags.consulKeyFile);
  if (!caFile && !certFile && !keyFile) return undefined;
  if (url.protocol !== 'https:')
    throw new OptionError(
      '--consul-ca-file, --consul-cert-file and --consul-key-file need an https:// --consul-addr',
    );
  if (Boolean(certFile) !== Boolean(keyFile))
    throw new OptionError('--consul-cert-file and --consul-key-file go together');
  return {
    ...(caFile && { ca: readPem(caFile, '--consul-ca-file') }),
    ...(certFile && { cert: readPem(certFile, '--consul-cert-file') }),
    ...(keyFile && { key: readPem(keyFile, '--consul-key-file') }),
  };
}

function readPem(file: string, flag: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new OptionError(
      `${flag}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
}

function parseDomain(value: string): string {
  const domain = value.toLowerCase().replace(/^\.+|\.+$/g, '');
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(domain))
    throw new OptionError(`--consul-domain: "${value}" is not a DNS domain`);
  return domain;
}

function parseBool(value: unknown): boolean {
  if (value === true || value === 'true' || value === '1' || value === 'yes') return true;
  if (value === false || value === 'false' || value === '0' || value === 'no') return false;
  throw new OptionError(`--consul-warning-healthy: expected true or false, got "${String(value)}"`);
}

function parseWait(value: string): number {
  const ms = parseDurationMs(value, '--consul-wait');
  if (ms < 1 || ms > MAX_WAIT_MS) throw new OptionError(`--consul-wait: between 1ms and 10m, got "${value}"`);
  return ms;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
