// A problem found in a config file, as the log and /debug/configz report it.

/** A problem found in a file. `line` is 1-based; 0 means the whole file (e.g. it could not be read). */
export interface ConfigIssue {
  readonly line: number;
  readonly column?: number;
  /** Field path inside the document, e.g. `spec.ports[1].number`. */
  readonly path?: string;
  readonly message: string;
}
