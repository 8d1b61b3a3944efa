import type { Deprecation } from '../../http/headers.ts';
import type { AnyRoute } from '../../http/route.ts';
import { routeTable } from '../../http/routes/index.ts';
import { printTable } from '../table.ts';
import type { RegisterCommand } from './register-command.ts';

interface RouteFilters {
  method?: string;
  path?: string;
  name?: string;
}

export const registerRouteList: RegisterCommand = (program, _loadConfig, loadDescription) => {
  program
    .command('route:list')
    .description('List every route: method, path, name, permission and deprecation')
    .option('--method <method>', 'only routes of this method (exactly, in any case: get is GET)')
    .option('--path <text>', 'only routes whose path contains this text (/users/{id} reads as /users/:id)')
    .option('--name <text>', 'only routes whose name contains this text (user:: for the user routes)')
    .option('--json', 'print the list as JSON', false)
    .addHelpText(
      'after',
      '\nFilters combine: every one given must match. Paths and names match case-sensitively.\n' +
        'Example: route:list --method GET --path /users --name user::',
    )
    .action((options: RouteFilters & { json: boolean }) => {
      const description = loadDescription();
      const rows = routeTable(description.grants)
        .filter(matches(options))
        .map((route) => ({
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
      printTable(header, rows);
    });
};

/** Whether a route passes every filter given. */
function matches({ method, path, name }: RouteFilters): (route: AnyRoute) => boolean {
  // The documents write parameters as OpenAPI does, `{id}`; the table as the router does, `:id`.
  const pathText = path?.replace(/\{([^{}]*)\}/g, ':$1');
  return (route) =>
    (method === undefined || route.method === method.toUpperCase()) &&
    (pathText === undefined || route.path.includes(pathText)) &&
    (name === undefined || route.name.includes(name));
}

function describeDeprecation(deprecation: Deprecation | undefined): string {
  if (!deprecation) return '-';
  const day = (date: Date) => date.toISOString().slice(0, 10);
  return `since ${day(deprecation.since)}, sunset ${day(deprecation.sunset)}`;
}
