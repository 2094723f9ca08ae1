// What the store keeps of each config file beyond its last accepted text: what that text loaded to
// (its validated resources, as JSON), so a restart takes an unchanged file without parsing and
// validating it again. The store implements it (store/config-loads.ts); the config directory reads
// it once at start (config-dir/file-records.ts).

export interface AcceptedFile {
  /** The last accepted text (the store's config_files row). */
  readonly text: string;
  /** What that text loaded to, when the build reading it stored it (`format`); else undefined. */
  readonly load: string | undefined;
}

export interface AcceptedFiles {
  /**
   * Every file's last accepted version, in one read; `format` names the build whose loads are
   * good here. Undefined when it cannot be read (the caller then asks per file).
   */
  all(format: string): ReadonlyMap<string, AcceptedFile> | undefined;
  /** What the accepted `text` of `path` loaded to (written behind, with the history rows). */
  recordLoad(path: string, text: string, format: string, load: string): void;
  removeLoad(path: string): void;
  /**
   * What exactly `text` of `path` loaded to with build `format`, when known beyond this store's
   * accepted files (another replica's, --store): a cache, never a version in force. Asked at start
   * only, for a file whose text is not the stored accepted one.
   */
  loadOf?(path: string, text: string, format: string): string | undefined;
}
