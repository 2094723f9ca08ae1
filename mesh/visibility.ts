// `exportTo`: which namespaces see a resource. Absent or `*` is everyone, `.` the resource's own
// namespace, `~` nobody, anything else a namespace name.

export function visibleTo(
  exportTo: readonly string[] | undefined,
  resourceNamespace: string,
  viewerNamespace: string,
): boolean {
  if (!exportTo || exportTo.length === 0) return true;
  return exportTo.some(
    (e) =>
      e === '*' ||
      (e === '.' && resourceNamespace === viewerNamespace) ||
      (e !== '~' && e === viewerNamespace),
  );
}
