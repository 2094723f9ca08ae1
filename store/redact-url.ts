// A store URL as it may be printed: in errors, logs and /debug pages. The password of its user part
// and the query parameters libpq reads secrets from (`password`, `sslpassword`) are masked; the rest
// (user, host, port, database, sslmode, sslrootcert…) stays as written, since that is what an
// operator needs to find the store.
const SECRET_PARAMS = new Set(['password', 'sslpassword']);

export function redactStoreUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(unparseable store URL)';
  }
  if (parsed.password) parsed.password = '***';
  if (parsed.search)
    parsed.search = parsed.search
      .slice(1)
      .split('&')
      .map((pair) => {
        const name = pair.split('=', 1)[0] ?? '';
        return SECRET_PARAMS.has(safeDecode(name).toLowerCase()) ? `${name}=***` : pair;
      })
      .join('&');
  return parsed.toString();
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
