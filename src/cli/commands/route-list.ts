import { buildRouteTable } from '../../app.ts';
import type { Deprecation, ServiceDescription } from '../../config.ts';
import type { AnyRoute } from '../../http/route.ts';
import type { RegisterCommand } from './index.ts';

export const registerRouteList: RegisterCommand = (program, _loadConfig, loadDescription) => {
  program
    .command('route:list')
    .description('List every route: method, path, name, permission and deprecation')
    .option('--json', 'print the list as JSON', false)
    .action((options: { json: boolean }) => {
      const description = loadDescription();
      const rows = routeTableWithoutServices(description).map((route) => ({
        method: route.method,
        path: route.path,
        name: route.name,
        permission: route.permission === 'public' ? 'public' : route.permission.join(','),
        deprecation: describeDeprecation(description.deprecations[route.name]),
      }));
      if (options.json) {
        console.log(JSON.stringify(rows, null, 2));
        return;
      }
      const header = {
        method: 'METHOD',
        path: 'PATH',
        name: 'NAME',
        permission: 'PERMISSION',
        deprecation: 'DEPRECATION',
      };
      const columns = Object.keys(header) as (keyof typeof header)[];
      const widths = columns.map((column) => Math.max(...[header, ...rows].map((row) => row[column].length)));
      for (const row of [header, ...rows]) {
        console.log(
          columns
            .map((column, index) => row[column].padEnd(widths[index] ?? 0))
            .join('  ')
            .trimEnd(),
        );
      }
    });
};

function describeDeprecation(deprecation: Deprecation | undefined): string {
  if (!deprecation) return '-';
  const day = (date: Date) => date.toISOString().slice(0, 10);
  return `since ${day(deprecation.since)}, sunset ${day(deprecation.sunset)}`;
}

/**
 * The service's route table, built by the same `buildRouteTable` the service uses but with
 * services that are never called: `route:list` and `openapi:generate` read the routes' data
 * without opening a store. A route factory that called a service while building the table
 * would fail here loudly, which is the point: building the table must not do I/O.
 */
export function routeTableWithoutServices(description: ServiceDescription): AnyRoute[] {
  type Services = Parameters<typeof buildRouteTable>[0];
  const services = new Proxy({} as Services, {
    get: (_target, key) => (key === 'config' ? description : unavailable(String(key))),
  });
  return buildRouteTable(services);
}

/** A stand-in for a service: any property is another stand-in, any call throws. */
function unavailable(path: string): unknown {
  const fail = () => {
    throw new Error(`${path} was called while only listing routes`);
  };
  return new Proxy(fail, {
    get: (_target, key) =>
      // Not a thenable, not convertible: nothing mistakes a stand-in for a value.
      typeof key === 'symbol' || key === 'then' ? undefined : unavailable(`${path}.${key}`),
    apply: fail,
  });
}
