import { Type } from '@sinclair/typebox';
import {
  ActivationBody,
  CurrentPasswordBody,
  EmailBody,
  PasswordResetBody,
  RegisterBody,
} from '../../accounts/schemas.ts';
import { HAL_JSON } from '../hal.ts';
import { type AnyRoute, defineRoute, type Reply } from '../route.ts';
import { AccountSchema, LOCATION, MessageSchema, problems } from '../schemas.ts';
import { accountReply, createdReply } from './users-and-admins.ts';

/**
 * What the mail-sending requests answer, whether or not the address belongs to an account:
 * the same status and body either way, so they cannot be used to find out who has one.
 */
export const ANSWERS = {
  resendActivation:
    'If the address belongs to an account waiting for activation, a new activation link has been sent to it',
  recoverIdentity: 'If the address belongs to an account, a message naming its identity has been sent to it',
  requestPasswordReset:
    'If the address belongs to an active account, a password reset link has been sent to it',
  passwordReset: 'The password has been changed; sign in with the new one',
} as const;

const message = (text: string): Reply => ({ status: 200, body: { message: text } });

/** A request that mails something to an address: its flow runs, and the answer is always the same. */
function mailRequestRoute(
  path: string,
  name: string,
  flow: 'resendActivation' | 'recoverIdentity' | 'requestPasswordReset',
  summary: string,
): AnyRoute {
  return defineRoute({
    method: 'POST',
    path,
    name,
    summary,
    tags: ['account'],
    permission: 'public',
    body: EmailBody,
    responses: { 200: { description: 'Done', schema: MessageSchema }, ...problems(400, 413, 415, 503) },
    async handler({ body }, { accountFlows }) {
      await accountFlows[flow](body.email);
      return message(ANSWERS[flow]);
    },
  });
}

/**
 * The self-service routes of user accounts. They are public (docs/api.md): nobody needs to
 * be signed in to use them, and a caller who is signed in may use them as well; the
 * Authorization header is not looked at.
 */
export const selfServiceRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/account/register',
    name: 'account::register',
    summary: 'Register a user account; it stays pending until the mailed activation link is used',
    tags: ['account'],
    permission: 'public',
    body: RegisterBody,
    responses: {
      201: {
        description: 'The pending account; Location names it',
        schema: AccountSchema,
        contentType: HAL_JSON,
        headers: LOCATION,
      },
      ...problems(400, 409, 413, 415, 503),
    },
    async handler({ body }, { accountFlows }) {
      return createdReply(await accountFlows.register(body), 'user');
    },
  }),
  mailRequestRoute(
    '/account/activate',
    'account::resend-activation',
    'resendActivation',
    'Mail a new activation link (same answer whether or not the address has a pending account)',
  ),
  defineRoute({
    method: 'PATCH',
    path: '/account/activate/:hash',
    name: 'account::activate',
    summary:
      'Activate the account of a mailed activation link (single use), with the password chosen at registration',
    tags: ['account'],
    permission: 'public',
    body: ActivationBody,
    responses: {
      200: { description: 'The activated account', schema: AccountSchema, contentType: HAL_JSON },
      ...problems(400, 404, 413, 415, 503),
    },
    async handler({ params, body }, { accountFlows }) {
      return accountReply(await accountFlows.activate(params.hash ?? '', body.password), 'user');
    },
  }),
  mailRequestRoute(
    '/account/recover-identity',
    'account::recover-identity',
    'recoverIdentity',
    'Mail the identity of the account with this address (same answer whether or not there is one)',
  ),
  mailRequestRoute(
    '/account/reset-password',
    'account::request-password-reset',
    'requestPasswordReset',
    'Mail a password reset link (same answer whether or not the address has an active account)',
  ),
  defineRoute({
    method: 'PATCH',
    path: '/account/change-identity/:hash',
    name: 'account::change-identity',
    summary:
      "Move the account to the address of a mailed change of address link (single use), with the account's password",
    tags: ['account'],
    permission: 'public',
    body: CurrentPasswordBody,
    responses: {
      200: { description: 'The account at its new address', schema: AccountSchema, contentType: HAL_JSON },
      ...problems(400, 404, 409, 413, 415, 503),
    },
    async handler({ params, body }, { accountFlows }) {
      return accountReply(await accountFlows.confirmIdentityChange(params.hash ?? '', body), 'user');
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/account/reset-password/:hash',
    name: 'account::check-password-reset',
    summary: 'Tell whether a password reset link can still be used',
    tags: ['account'],
    permission: 'public',
    responses: {
      200: {
        description: 'The link is usable until expiresAt',
        schema: Type.Object({ valid: Type.Literal(true), expiresAt: Type.String({ format: 'date-time' }) }),
      },
      ...problems(404, 503),
    },
    async handler({ params }, { accountFlows }) {
      const { expiresAt } = await accountFlows.checkLink('reset', params.hash ?? '');
      return { status: 200, body: { valid: true, expiresAt: expiresAt.toISOString() } };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/account/reset-password/:hash',
    name: 'account::reset-password',
    summary: 'Set a new password through a reset link (single use; ends every session of the account)',
    tags: ['account'],
    permission: 'public',
    body: PasswordResetBody,
    responses: {
      200: { description: 'Password changed', schema: MessageSchema },
      ...problems(400, 404, 413, 415, 503),
    },
    async handler({ params, body }, { accountFlows }) {
      await accountFlows.resetPassword(params.hash ?? '', body);
      return message(ANSWERS.passwordReset);
    },
  }),
];
