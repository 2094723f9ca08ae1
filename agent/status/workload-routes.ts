// The status routes a workload's modules add (its registration's /debug/workload), with several
// workloads on one agent: one path for all of them, `?workload=NAME` selecting one, and without it
// every workload's answer under its name. With a single unnamed workload, routes pass through as
// they were.
import type { RouteTable } from '../module.js';
import type { Route } from './status-server.js';

export class WorkloadRoutes {
  /** path → workload name → route */
  private readonly byPath = new Map<string, Map<string, Route>>();

  constructor(private readonly status: RouteTable) {}

  /** The route table a workload's modules see. */
  forWorkload(name: string | undefined): RouteTable {
    if (name === undefined) return this.status;
    return { addRoute: (path, route) => this.add(path, name, route) };
  }

  private add(path: string, name: string, route: Route): void {
    let routes = this.byPath.get(path);
    if (!routes) {
      const table = new Map<string, Route>();
      routes = table;
      this.byPath.set(path, table);
      this.status.addRoute(path, (query) => this.serve(table, query));
    }
    routes.set(name, route);
  }

  private async serve(
    routes: ReadonlyMap<string, Route>,
    query: URLSearchParams,
  ): Promise<{ status: number; type: string; body: string }> {
    const wanted = query.get('workload');
    if (wanted !== null) {
      const route = routes.get(wanted);
      if (route) return route(query);
      const known = [...routes.keys()].join(', ');
      return { status: 404, type: 'text/plain', body: `no workload ${wanted} here (known: ${known})\n` };
    }
    const all: Record<string, unknown> = {};
    for (const [name, route] of routes) {
      const answer = await route(query);
      all[name] = answer.type.startsWith('application/json')
        ? (JSON.parse(answer.body) as unknown)
        : answer.body;
    }
    return { status: 200, type: 'application/json', body: `${JSON.stringify(all, null, 2)}\n` };
  }
}
