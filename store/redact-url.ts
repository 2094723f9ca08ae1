// A store URL as it may be printed: in errors, logs and /debug pages, without its password.
export function redactStoreUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable store URL)';
  }
}
