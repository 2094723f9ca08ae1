// What `portolan proxy-config` can show, and how: its argument's and --output's choices.
export const CONFIG_KINDS = ['clusters', 'listeners', 'routes', 'endpoints', 'all'] as const;
export type ConfigKind = (typeof CONFIG_KINDS)[number];
export type ConfigFormat = 'table' | 'json' | 'yaml';
