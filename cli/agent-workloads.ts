// The workloads `portolan agent` serves: the single form (`--service-account`, `--token`, `--group`:
// one unnamed workload with the historical paths), or several `--workload
// name=NAME,service-account=SA,token-file=FILE[,group=GROUP][,user=USER]`, each with its own
// certificate in CERT_DIR/NAME, its sockets in RUN_DIR/NAME, its cache in DATA_DIR/NAME/xds-cache and
// its node id NAME.HOSTNAME. The two forms do not mix. A bare `--workload NAME` selects the workload
// --print-bootstrap prints.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { SocketOwner } from '../agent/unix-socket.js';
import { readCertDir } from '../ca/cert-dir.js';
import { IdentityError, parseSpiffeUri, validateTrustDomain, workloadIdentity } from '../ca/identity.js';
import { tokenIdentity, TokenError } from '../ca/join-tokens.js';
import { DEFAULT_TRUST_DOMAIN } from '../mesh/workload-certs.js';
import type { AgentFlags, WorkloadSettings } from './agent-settings.js';
import { OptionError } from '../adapters/option-values.js';

/** commander's parser for the repeatable --workload (and PORTOLAN_WORKLOAD, `;` between several). */
export function collectWorkload(value: string, previous: string[] | undefined): string[] {
  const parts = value
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean);
  return [...(previous ?? []), ...parts];
}

/** A --workload value, parsed. */
interface WorkloadSpec {
  readonly name: string;
  readonly serviceAccount: string;
  readonly tokenFile: string;
  readonly group?: string;
  readonly user?: string;
}

const KEYS: Record<string, keyof WorkloadSpec> = {
  name: 'name',
  'service-account': 'serviceAccount',
  'token-file': 'tokenFile',
  group: 'group',
  user: 'user',
};
const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const GROUP = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const USAGE = 'name=NAME,service-account=SA,token-file=FILE[,group=GROUP][,user=USER]';

function parseSpec(text: string): WorkloadSpec {
  const fields: Partial<Record<keyof WorkloadSpec, string>> = {};
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq).trim();
    const field = KEYS[key];
    if (eq < 0 || !field) throw new OptionError(`--workload "${text}": "${part}" is not one of ${USAGE}`);
    if (fields[field] !== undefined) throw new OptionError(`--workload "${text}": ${key} given twice`);
    fields[field] = part.slice(eq + 1).trim();
  }
  const { name, serviceAccount, tokenFile, group, user } = fields;
  if (!name || !serviceAccount || !tokenFile)
    throw new OptionError(
      `--workload "${text}": name, service-account and token-file are required (${USAGE})`,
    );
  if (!NAME.test(name))
    throw new OptionError(
      `--workload ${name}: the name must be a DNS label (lowercase letters, digits, '-'; at most 63): it names directories and node ids`,
    );
  if (group !== undefined && !GROUP.test(group))
    throw new OptionError(`--workload ${name}: group "${group}" is not a WorkloadGroup name`);
  if (user === '') throw new OptionError(`--workload ${name}: user= names no user`);
  return { name, serviceAccount, tokenFile, ...(group && { group }), ...(user && { user }) };
}

/** The token of a workload's token file (surrounding whitespace, the trailing newline, ignored). */
function readToken(spec: WorkloadSpec, certDir: string): string | undefined {
  try {
    const token = readFileSync(spec.tokenFile, 'utf8').trim();
    if (token === '') throw new OptionError(`--workload ${spec.name}: token-file ${spec.tokenFile} is empty`);
    return token;
  } catch (err) {
    if (err instanceof OptionError) throw err;
    // Enrolled already: the token was for the first certificate, and may be gone since.
    if (readCertDir(certDir).kind === 'held') return undefined;
    throw new OptionError(`--workload ${spec.name}: token-file: ${(err as Error).message}`);
  }
}

/** A Unix user's uid and primary gid, through the system's user database (getent: files, LDAP, …). */
function lookupUser(workload: string, user: string): SocketOwner {
  const out = spawnSync('getent', ['passwd', user], { encoding: 'utf8', timeout: 5000 });
  const fields = out.status === 0 ? out.stdout.split('\n')[0]?.split(':') : undefined;
  const uid = Number(fields?.[2]);
  const gid = Number(fields?.[3]);
  if (!fields || !Number.isInteger(uid) || !Number.isInteger(gid))
    throw new OptionError(`--workload ${workload}: user=${user}: no such user (getent passwd ${user})`);
  return { user: fields[0] ?? user, uid, gid };
}

/** The identity a token names, checked to be a workload's. */
function tokenSpiffeId(token: string, flag: string): string {
  let uri: string;
  try {
    uri = tokenIdentity(token);
  } catch (err) {
    if (err instanceof TokenError) throw new OptionError(`${flag}: ${err.message}`);
    throw err;
  }
  if (!parseSpiffeUri(uri)) throw new OptionError(`${flag}: it names ${uri}, not a workload identity`);
  return uri;
}

function identityOf(trustDomain: string, namespace: string, serviceAccount: string): string {
  try {
    return workloadIdentity(trustDomain, namespace, serviceAccount);
  } catch (err) {
    if (err instanceof IdentityError) throw new OptionError(err.message);
    throw err;
  }
}

function trustDomainOf(text: string): string {
  try {
    return validateTrustDomain(text);
  } catch (err) {
    if (err instanceof IdentityError) throw new OptionError(err.message);
    throw err;
  }
}

/** The workloads the flags name, and the one a bare `--workload NAME` selects. */
export function compileWorkloads(
  flags: AgentFlags,
  envToken: string | undefined,
  runDir: string,
): { workloads: WorkloadSettings[]; selected?: string } {
  const values = flags.workload ?? [];
  const selectors = values.filter((v) => !v.includes('='));
  const specs = values.filter((v) => v.includes('=')).map(parseSpec);
  if (specs.length === 0) {
    if (selectors.length > 0)
      throw new OptionError(
        `--workload ${selectors[0] ?? ''}: a bare name selects one of the workloads given with --workload name=…; none is`,
      );
    return { workloads: [single(flags, envToken, runDir)] };
  }
  const token = flags.token ?? (envToken || undefined);
  const mixed = [
    flags.serviceAccount !== undefined && '--service-account',
    token !== undefined && '--token (or PORTOLAN_JOIN_TOKEN)',
    flags.group !== undefined && '--group',
    flags.nodeId !== undefined && '--node-id',
    flags.xdsSocket !== undefined && '--xds-socket',
    flags.sdsSocket !== undefined && '--sds-socket',
  ].filter((f): f is string => typeof f === 'string');
  if (mixed.length > 0)
    throw new OptionError(
      `--workload and ${mixed.join(', ')} do not mix: give each workload's identity in its --workload value (${USAGE})`,
    );
  if (flags.listenXds !== undefined && flags.listenXds !== 'off')
    throw new OptionError(
      "--listen-xds: with --workload, local xDS is served on each workload's sockets only (a TCP port cannot tell workloads apart)",
    );
  const seen = new Map<string, string>();
  for (const spec of specs) {
    for (const [kind, value] of [
      ['name', spec.name],
      ['group', spec.group],
    ] as const) {
      if (value === undefined) continue;
      const key = `${kind}=${value}`;
      if (seen.has(key))
        throw new OptionError(
          `--workload ${spec.name}: ${key} is also ${seen.get(key) ?? ''}'s; each workload needs its own${kind === 'group' ? ' (one entry per group and address)' : ''}`,
        );
      seen.set(key, spec.name);
    }
  }
  const [selected, ...more] = selectors;
  if (more.length > 0) throw new OptionError(`--workload: select one workload, not ${selectors.join(', ')}`);
  if (selected !== undefined && !specs.some((s) => s.name === selected))
    throw new OptionError(
      `--workload ${selected}: no such workload (given: ${specs.map((s) => s.name).join(', ')})`,
    );
  const certDir = resolve(flags.certDir);
  const dataDir = resolve(flags.dataDir);
  const tokens = specs.map((s) => readToken(s, join(certDir, s.name)));
  const firstTd = tokens.map(
    (t, i) => t && tokenSpiffeId(t, `--workload ${specs[i]?.name ?? ''}: token-file`),
  );
  const trustDomain = trustDomainOf(
    flags.trustDomain ??
      firstTd.map((u) => u && parseSpiffeUri(u)?.trustDomain).find(Boolean) ??
      heldTrustDomain(join(certDir, specs[0]?.name ?? '')) ??
      DEFAULT_TRUST_DOMAIN,
  );
  const workloads = specs.map((spec, i): WorkloadSettings => {
    const spiffeId = identityOf(trustDomain, flags.namespace, spec.serviceAccount);
    const tokenUri = firstTd[i];
    if (tokenUri && tokenUri !== spiffeId)
      throw new OptionError(
        `--workload ${spec.name}: its join token is for ${tokenUri}, but its service-account and --namespace/--trust-domain make ${spiffeId}`,
      );
    const token = tokens[i];
    return {
      name: spec.name,
      identity: { trustDomain, namespace: flags.namespace, serviceAccount: spec.serviceAccount },
      spiffeId,
      nodeId: `${spec.name}.${hostname()}`,
      ...(token && { token }),
      certDir: join(certDir, spec.name),
      cacheDir: join(dataDir, spec.name, 'xds-cache'),
      xdsSocket: join(runDir, spec.name, 'xds.sock'),
      sdsSocket: join(runDir, spec.name, 'sds.sock'),
      ...(spec.group && { group: spec.group }),
      ...(spec.user && { owner: lookupUser(spec.name, spec.user) }),
    };
  });
  return { workloads, ...(selected && { selected }) };
}

function heldTrustDomain(certDir: string): string | undefined {
  const held = readCertDir(certDir);
  return held.kind === 'held' ? parseSpiffeUri(held.cert.identity)?.trustDomain : undefined;
}

/** The single form: --service-account, --token, --group, --node-id, the sockets in the run dir. */
function single(flags: AgentFlags, envToken: string | undefined, runDir: string): WorkloadSettings {
  if (flags.serviceAccount === undefined)
    throw new OptionError(
      `required option '--service-account <sa>' not specified (or give workloads: --workload ${USAGE})`,
    );
  const token = flags.token ?? (envToken || undefined);
  const tokenUri = token ? tokenSpiffeId(token, '--token') : undefined;
  const certDir = resolve(flags.certDir);
  const trustDomain = trustDomainOf(
    flags.trustDomain ??
      (tokenUri && parseSpiffeUri(tokenUri)?.trustDomain) ??
      heldTrustDomain(certDir) ??
      DEFAULT_TRUST_DOMAIN,
  );
  const spiffeId = identityOf(trustDomain, flags.namespace, flags.serviceAccount);
  if (tokenUri && tokenUri !== spiffeId)
    throw new OptionError(
      `the join token is for ${tokenUri}, but --namespace/--service-account/--trust-domain make ${spiffeId}`,
    );
  const socket = (value: string | undefined, name: string): string | undefined =>
    value === 'off' ? undefined : resolve(value ?? join(runDir, name));
  if (flags.group !== undefined && !GROUP.test(flags.group))
    throw new OptionError(`--group: "${flags.group}" is not a WorkloadGroup name`);
  const xdsSocket = socket(flags.xdsSocket, 'xds.sock');
  const sdsSocket = socket(flags.sdsSocket, 'sds.sock');
  return {
    identity: { trustDomain, namespace: flags.namespace, serviceAccount: flags.serviceAccount },
    spiffeId,
    nodeId: flags.nodeId ?? `${flags.serviceAccount}.${hostname()}`,
    ...(token && { token }),
    certDir,
    cacheDir: join(resolve(flags.dataDir), 'xds-cache'),
    ...(xdsSocket && { xdsSocket }),
    ...(sdsSocket && { sdsSocket }),
    ...(flags.group && { group: flags.group }),
  };
}
