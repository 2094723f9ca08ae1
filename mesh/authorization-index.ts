// Which AuthorizationPolicies and RequestAuthentications apply to a workload, as Istio selects
// them: those of the root namespace (istio-system) apply mesh-wide — without a selector to every
// workload, with one to the matching workloads of every namespace — and those of the workload's own
// namespace apply to it when they have no selector or their selector matches its labels. Grouped by
// namespace once per config; answers are in config order (root namespace first), so what is built
// from them is stable.
import type { AuthorizationPolicyResource, RequestAuthenticationResource } from './types.js';
import type { WorkloadSelector } from './security-types.js';
import { ROOT_NAMESPACE } from './destination-rule-index.js';

type Labels = Readonly<Record<string, string>>;

/** Answers kept per index, by namespace and labels, before they are dropped and built again. */
const MAX_ANSWERS = 4096;

/** A workload as selection sees it: its namespace and labels (a node's NAMESPACE and LABELS). */
export interface WorkloadRef {
  readonly namespace: string;
  readonly labels: Labels;
}

interface Selectable {
  readonly namespace: string;
  readonly spec: { readonly selector?: WorkloadSelector };
}

class SelectorIndex<T extends Selectable> {
  private readonly byNamespace = new Map<string, T[]>();
  private readonly answers = new Map<string, readonly T[]>();

  constructor(items: readonly T[]) {
    for (const item of items) {
      const list = this.byNamespace.get(item.namespace) ?? [];
      list.push(item);
      this.byNamespace.set(item.namespace, list);
    }
  }

  select(workload: WorkloadRef): readonly T[] {
    const key = JSON.stringify([workload.namespace, workload.labels]);
    let answer = this.answers.get(key);
    if (!answer) {
      const applies = (item: T): boolean =>
        !item.spec.selector || matches(item.spec.selector.matchLabels, workload.labels);
      const root = this.byNamespace.get(ROOT_NAMESPACE) ?? [];
      const own =
        workload.namespace === ROOT_NAMESPACE ? [] : (this.byNamespace.get(workload.namespace) ?? []);
      answer = [...root.filter(applies), ...own.filter(applies)];
      // Kept while the lists are (mesh-index.ts): bounded, as proxies come and go meanwhile.
      if (this.answers.size >= MAX_ANSWERS) this.answers.clear();
      this.answers.set(key, answer);
    }
    return answer;
  }
}

export class AuthorizationIndex {
  private readonly policies: SelectorIndex<AuthorizationPolicyResource>;
  private readonly requestAuthentications: SelectorIndex<RequestAuthenticationResource>;

  constructor(
    policies: readonly AuthorizationPolicyResource[],
    requestAuthentications: readonly RequestAuthenticationResource[],
  ) {
    this.policies = new SelectorIndex(policies);
    this.requestAuthentications = new SelectorIndex(requestAuthentications);
  }

  /** The AuthorizationPolicies that apply to `workload` (every action). */
  policiesFor(workload: WorkloadRef): readonly AuthorizationPolicyResource[] {
    return this.policies.select(workload);
  }

  /** The RequestAuthentications that apply to `workload`. */
  requestAuthenticationsFor(workload: WorkloadRef): readonly RequestAuthenticationResource[] {
    return this.requestAuthentications.select(workload);
  }
}

function matches(selector: Labels, labels: Labels): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}
