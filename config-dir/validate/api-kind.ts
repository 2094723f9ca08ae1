// A document's `apiVersion` and `kind` → the kind it is, or why it is skipped or rejected.
//
// Another API group (`apps/v1`, core `v1`, `gateway.networking.k8s.io/v1`) is someone else's
// resource, in a directory shared with other tools: ignored with a warning. But a near miss of one of
// ours — `kind: WorkloadEntri`, `apiVersion: networking.istio.oi/v1`, a case slip, a kind under the
// other Istio group, a version we do not read — is an error with a suggestion: ignored, it would
// silently drop what the file defines (a VM leaving its service) while the file showed `ok`, and as
// an error the file's last good version stays in force, as for a misspelt field.
import { SECURITY_API_VERSIONS, SUPPORTED_API_VERSIONS, type ConfigKind } from '../../mesh/types.js';
import { apiGroupOf, CONFIG_KINDS } from '../../mesh/config-kinds.js';
import { closest, editDistance } from './schema.js';

export type KindVerdict =
  | { readonly kind: ConfigKind }
  | {
      readonly field: 'apiVersion' | 'kind';
      readonly severity: 'error' | 'warning';
      readonly message: string;
    };

const NETWORKING = groupOf(SUPPORTED_API_VERSIONS[0]);
const SECURITY = groupOf(SECURITY_API_VERSIONS[0]);

/** Each kind's API group, from the table of config kinds. */
const HOME: Record<ConfigKind, string> = Object.fromEntries(
  CONFIG_KINDS.map((kind) => [kind, apiGroupOf(kind) === 'security' ? SECURITY : NETWORKING]),
) as Record<ConfigKind, string>;
const ALL_KINDS = CONFIG_KINDS;

/** Each Istio API group Portolan reads, with its versions and kinds. */
const GROUPS: ReadonlyMap<string, { versions: readonly string[]; kinds: readonly ConfigKind[] }> = new Map(
  [SUPPORTED_API_VERSIONS, SECURITY_API_VERSIONS].map((apiVersions) => {
    const group = groupOf(apiVersions[0]);
    return [
      group,
      {
        versions: apiVersions.map((v) => v.slice(group.length + 1)),
        kinds: ALL_KINDS.filter((k) => HOME[k] === group),
      },
    ];
  }),
);

/**
 * A group within this many edits of one of ours is taken for a slip (`networking.istio.oi`, a
 * missing letter). Lower than the third of a name allowed for fields: group names are long, and
 * `networking.k8s.io` (Ingress, NetworkPolicy) is four edits from `networking.istio.io`.
 */
const GROUP_SLIP = 2;

export function classifyKind(apiVersion: string, kind: string): KindVerdict {
  const slash = apiVersion.lastIndexOf('/');
  // `networking.istio.io` alone is a group without its version; `v1` alone is Kubernetes' core group.
  const group = slash >= 0 ? apiVersion.slice(0, slash) : apiVersion.includes('.') ? apiVersion : '';
  const version = slash >= 0 ? apiVersion.slice(slash + 1) : apiVersion.includes('.') ? '' : apiVersion;
  const ours = GROUPS.get(group);
  if (!ours) {
    const meant = nearGroup(group);
    if (meant === undefined) return ignored(apiVersion, kind);
    const versions = GROUPS.get(meant)?.versions ?? [];
    const suggestion = `${meant}/${versions.includes(version) ? version : (versions[0] ?? '')}`;
    return error('apiVersion', `unknown API group ${quote(group)} (did you mean ${quote(suggestion)}?)`);
  }
  if (!(ALL_KINDS as readonly string[]).includes(kind)) {
    const meant = closest(kind, ALL_KINDS);
    if (meant === undefined) return ignored(apiVersion, kind);
    return error('kind', `unknown kind ${quote(kind)} (did you mean ${quote(meant)}?)`);
  }
  const configKind = kind as ConfigKind;
  if (!ours.kinds.includes(configKind)) {
    const home = HOME[configKind];
    const suggestion = `${home}/${GROUPS.get(home)?.versions[0] ?? ''}`;
    return error('apiVersion', `${kind} is not in ${group} (did you mean ${quote(suggestion)}?)`);
  }
  if (!ours.versions.includes(version)) {
    const meant = closest(version, ours.versions);
    const hint = meant === undefined ? '' : ` (did you mean ${quote(`${group}/${meant}`)}?)`;
    const message = version
      ? `${kind} is read from ${group} ${ours.versions.join(', ')}, not ${version}${hint}`
      : `needs a version: ${ours.versions.map((v) => `${group}/${v}`).join(', ')}`;
    return error('apiVersion', message);
  }
  return { kind: configKind };
}

function groupOf(apiVersion: string): string {
  // Function declarations are hoisted: GROUPS and HOME above use this at module load.
  return apiVersion.slice(0, apiVersion.lastIndexOf('/'));
}

function nearGroup(group: string): string | undefined {
  const lower = group.toLowerCase();
  for (const ours of GROUPS.keys()) if (editDistance(lower, ours) <= GROUP_SLIP) return ours;
  return undefined;
}

function ignored(apiVersion: string, kind: string): KindVerdict {
  // A kind of ours in another group: the Kubernetes Gateway API's Gateway, say.
  if (Object.hasOwn(HOME, kind))
    return {
      field: 'apiVersion',
      severity: 'warning',
      message: `${kind} of ${apiVersion} is not the Istio ${kind} (${HOME[kind as ConfigKind]}) Portolan serves; ignored`,
    };
  return {
    field: 'kind',
    severity: 'warning',
    message: `${kind} (${apiVersion}) is not a kind Portolan serves; ignored`,
  };
}

function error(field: 'apiVersion' | 'kind', message: string): KindVerdict {
  return { field, severity: 'error', message };
}

function quote(s: string): string {
  return JSON.stringify(s);
}
