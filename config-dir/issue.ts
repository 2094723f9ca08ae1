// A problem found in a config file, as the log and /debug/configz report it.

/** A problem found in a file, in the admin API's shape (one definition: model/admin-api.ts). */
export type { ConfigIssue } from '../model/admin-api.js';
