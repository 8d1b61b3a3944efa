import type { Deprecation } from '../../http/headers.ts';
import { routeTable } from '../../http/routes/index.ts';
import { printTable } from '../table.ts';
import type { RegisterCommand } from './index.ts';

export const registerRouteList: RegisterCommand = (program, _loadConfig, loadDescription) => {
  program
    .command('route:list')
    .description('List every route: method, path, name, permission and deprecation')
    .option('--json', 'print the list as JSON', false)
    .action((options: { json: boolean }) => {
      const description = loadDescription();
      const rows = routeTable(description.grants).map((route) => ({
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

function describeDeprecation(deprecation: Deprecation | undefined): string {
  if (!deprecation) return '-';
  const day = (date: Date) => date.toISOString().slice(0, 10);
  return `since ${day(deprecation.since)}, sunset ${day(deprecation.sunset)}`;
}
