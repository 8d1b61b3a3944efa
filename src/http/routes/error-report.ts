import { Type } from '@sinclair/typebox';
import { resolveClientAddress } from '../../error-report/client-address.ts';
import { ErrorReportSchema } from '../../error-report/error-report.ts';
import { PROBLEM_JSON } from '../problem.ts';
import { type AnyRoute, defineRoute } from '../route.ts';
import { ProblemSchema, problems } from '../schemas.ts';

const PROBLEM = { schema: ProblemSchema, contentType: PROBLEM_JSON };

/**
 * `POST /error-report`: clients (typically a front end) report their errors. Public as far as
 * roles go: the static token and the client whitelist are its guard, checked by the receiver.
 */
export const errorReportRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/error-report',
    name: 'error-report',
    summary: 'Report a client-side error (Error-Reporting-Token header and a whitelisted client)',
    tags: ['error-report'],
    permission: 'public',
    body: ErrorReportSchema,
    responses: {
      201: {
        description: 'The report was appended to the error report log',
        schema: Type.Object({ message: Type.String() }),
      },
      ...problems(400, 413, 415),
      401: {
        ...PROBLEM,
        description: 'No Error-Reporting-Token header',
        headers: {
          'WWW-Authenticate': {
            description: 'Names the header to send: `Error-Reporting-Token`',
            schema: Type.Literal('Error-Reporting-Token'),
            required: true,
          },
        },
      },
      403: {
        ...PROBLEM,
        description:
          'Error reporting is not configured, the client is not whitelisted, or the token is wrong',
      },
    },
    handler({ req, body, remoteAddress }, { errorReports }) {
      errorReports.receive(
        {
          token: single(req.headers['error-reporting-token']),
          origin: single(req.headers.origin),
          client: resolveClientAddress({
            forwardedFor: req.headers['x-forwarded-for'],
            clientIp: req.headers['client-ip'],
            remoteAddress,
          }),
        },
        body,
      );
      return { status: 201, body: { message: 'Error report received' } };
    },
  }),
];

function single(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header;
}
