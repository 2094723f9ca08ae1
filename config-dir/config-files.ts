// Which names in a config directory are config files: apart from loading them (load-file.ts), so
// the CLI reading a candidate directory does not load the parsers and validators.
export const CONFIG_EXTENSIONS = ['.yaml', '.yml', '.json'] as const;

export function isConfigFile(path: string): boolean {
  return CONFIG_EXTENSIONS.some((ext) => path.toLowerCase().endsWith(ext));
}
