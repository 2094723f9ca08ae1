// `portolan version`: Portolan's version and the runtime it runs on, which for the packages
// (docs/install.md) is the Node.js binary they carry, not the machine's.
export function versionLine(version: string): string {
  return `portolan ${version} (Node.js ${process.version} at ${process.execPath}, ${process.platform}-${process.arch})`;
}
