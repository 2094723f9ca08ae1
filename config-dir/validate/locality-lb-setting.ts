// DestinationRule `loadBalancer.localityLbSetting`, checked as Istio checks it: `distribute` weights
// are 1..100 and add up to 100 per `from`; localities are `region[/zone[/subzone]]` with at most one
// `*`, at the end, and do not overlap; `failover` names two different regions (no `/`, no `*`);
// `distribute` and `failover` exclude each other, and `failover` excludes the locality labels in
// `failoverPriority` (the two would rank by region twice). The lists are bounded: the priorities
// they make must fit Envoy's 128 levels.
import type { LocalityLbSetting } from '../../mesh/types.js';
import { LOCALITY_LABELS } from '../../mesh/topology.js';
import type { FieldPath } from '../parse.js';
import { arrayOf, bool, int, mapOf, obj, str, type Check, type Problems } from './schema.js';

/** Up to 16 labels: with `failover` each label rank holds five locality ranks, 17 × 5 < 128. */
export const MAX_FAILOVER_PRIORITY = 16;
const MAX_ENTRIES = 64;

const locality = str({ nonEmpty: true, test: localityComplaint });

const distribute = obj(
  { from: locality, to: mapOf(int(1, 100), { nonEmpty: true }) },
  {
    required: ['from', 'to'],
    message: 'LocalityLoadBalancerSetting.Distribute',
    refine: (d, path, problems) => {
      if (!d.to) return;
      const keys = Object.keys(d.to);
      keys.forEach((k) => {
        const complaint = localityComplaint(k);
        if (complaint) problems.error([...path, 'to', k], complaint);
      });
      const total = Object.values(d.to).reduce((sum, w) => sum + w, 0);
      if (total !== 100) problems.error([...path, 'to'], `weights must add up to 100, got ${total}`);
      overlaps(keys, [...path, 'to'], problems);
    },
  },
);

const region = str({
  nonEmpty: true,
  test: (s) => (/[/*]/.test(s) ? `must be a region (no "/" or "*"), got ${JSON.stringify(s)}` : undefined),
});

const failover = obj(
  { from: region, to: region },
  {
    required: ['from', 'to'],
    message: 'LocalityLoadBalancerSetting.Failover',
    refine: (f, path, problems) => {
      if (f.from !== undefined && f.from === f.to)
        problems.error(path, `from and to must be different regions, both are ${JSON.stringify(f.from)}`);
    },
  },
);

const priorityLabel = str({
  nonEmpty: true,
  test: (s) => (s.startsWith('=') ? `must be a label key or key=value, got ${JSON.stringify(s)}` : undefined),
});

export const localityLbSetting: Check<LocalityLbSetting> = obj(
  {
    distribute: arrayOf(distribute),
    failover: arrayOf(failover),
    failoverPriority: arrayOf(priorityLabel),
    enabled: bool,
  },
  {
    message: 'LocalityLoadBalancerSetting',
    refine: (s, path, problems) => {
      bounded(s.distribute, MAX_ENTRIES, [...path, 'distribute'], problems);
      bounded(s.failover, MAX_ENTRIES, [...path, 'failover'], problems);
      bounded(s.failoverPriority, MAX_FAILOVER_PRIORITY, [...path, 'failoverPriority'], problems);
      if (s.distribute?.length && s.failover?.length)
        problems.error(path, 'distribute and failover cannot both be set');
      if (s.failover?.length)
        s.failoverPriority?.forEach((label, i) => {
          if (LOCALITY_LABELS.includes(label.split('=')[0] ?? ''))
            problems.error(
              [...path, 'failoverPriority', i],
              `${label} cannot be used together with failover (both rank by locality)`,
            );
        });
      if (s.distribute?.length && s.failoverPriority?.length)
        problems.warn(
          [...path, 'failoverPriority'],
          'ignored: distribute is set, and only one of them applies',
        );
      // Entries whose own checks failed are partial (see schema.ts): only the valid `from`s compare.
      const froms = (s.distribute ?? []).flatMap((d) => (d.from === undefined ? [] : [d.from]));
      overlaps(froms, [...path, 'distribute'], problems);
    },
  },
);

function bounded(
  list: readonly unknown[] | undefined,
  max: number,
  path: FieldPath,
  problems: Problems,
): void {
  if (list && list.length > max) problems.error(path, `at most ${max} entries, got ${list.length}`);
}

/** Why `s` is not `region`, `region/zone` or `region/zone/subzone` with an optional trailing `*`. */
function localityComplaint(s: string): string | undefined {
  const parts = s.split('/');
  if (parts.length > 3) return `must be region, region/zone or region/zone/subzone, got ${JSON.stringify(s)}`;
  if (parts.some((p) => p === '')) return `must not have an empty part, got ${JSON.stringify(s)}`;
  const stars = parts.filter((p) => p.includes('*'));
  if (stars.length > 1 || (stars.length === 1 && parts.at(-1) !== '*'))
    return `may only end in "*" (one, as the last part), got ${JSON.stringify(s)}`;
  return undefined;
}

/** Two localities of one list that cover a common locality (`us-west/*` and `us-west/zone1`). */
function overlaps(localities: readonly string[], path: FieldPath, problems: Problems): void {
  const covers = (a: string, b: string): boolean => {
    const pa = a.split('/');
    const pb = b.split('/');
    for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
      if (pa[i] === '*' || pb[i] === '*') return true;
      if (pa[i] !== pb[i]) return false;
    }
    // One is a prefix of the other: `us-west` covers everything in `us-west/zone1`.
    return true;
  };
  localities.forEach((a, i) => {
    const earlier = localities.slice(0, i).find((b) => covers(a, b));
    if (earlier !== undefined)
      problems.error(
        path,
        `${JSON.stringify(a)} overlaps ${JSON.stringify(earlier)}: each locality may be named once`,
      );
  });
}
