// The control plane as a workload names it: one HOST:PORT, or several separated by commas (the
// replicas of an HA deployment, docs/ha.md). A DNS name is one entry: gRPC's resolver finds all its
// A/AAAA records and its pick_first policy tries each in turn; the list is for replicas that are not
// behind one name. Workloads try the entries in order and move to the next when one is unreachable.

/** The entries of a comma-separated address list, trimmed, empty ones dropped. */
export function controlPlaneAddresses(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
