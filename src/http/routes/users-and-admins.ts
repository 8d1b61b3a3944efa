import { type TSchema, Type } from '@sinclair/typebox';
import { accountListQuery } from '../../accounts/listing.ts';
import type { Account, AccountKind } from '../../accounts/model.ts';
import {
  ACCOUNT_OPERATIONS,
  ACCOUNT_PERMISSIONS,
  type AccountOperation,
} from '../../accounts/permissions.ts';
import { viewAccount } from '../../accounts/representation.ts';
import {
  CreateAdminBody,
  CreateUserBody,
  CurrentPasswordBody,
  IdentityChangeBody,
  OwnProfileBody,
  UpdateAdminBody,
  UpdateUserBody,
} from '../../accounts/schemas.ts';
import type { Role } from '../../caller.ts';
import { searchParamsObject } from '../body.ts';
import { HAL_JSON, halCollection, halResource } from '../hal.ts';
import { type AnyRoute, defineRoute, type Reply } from '../route.ts';
import { AccountSchema, LOCATION, MessageSchema, problems } from '../schemas.ts';

/** An account as a HAL resource, under `/users` or `/admins`, linking its avatar if it has one. */
function accountResource(account: Account, kind: AccountKind) {
  const self = `/${kind}s/${account.id}`;
  return halResource(
    viewAccount(account),
    self,
    account.hasAvatar ? { avatar: { href: `${self}/avatar` } } : {},
  );
}

export function accountReply(account: Account, kind: AccountKind, status = 200): Reply {
  return { status, contentType: HAL_JSON, body: accountResource(account, kind) };
}

/** 201 with Location for a created account. */
export function createdReply(account: Account, kind: AccountKind): Reply {
  return { ...accountReply(account, kind, 201), headers: { Location: `/${kind}s/${account.id}` } };
}

/**
 * The answer to a change of address request, whether or not the new address has an account:
 * the same status and body either way.
 */
export const IDENTITY_CHANGE_REQUESTED =
  'A message has been sent to the new address and a notice to the current one. If the new address can be ' +
  'used, its message holds a link to confirm it; nothing changes until then';

/** How one kind of account is exposed: what differs between `/users` and `/admins`. */
interface AccountResource {
  kind: AccountKind;
  /** The OpenAPI tag and the `_embedded` relation of a page. */
  tag: 'users' | 'admins';
  collectionId: string;
  create: typeof CreateUserBody | typeof CreateAdminBody;
  update: typeof UpdateUserBody | typeof UpdateAdminBody;
  /** Whether a deletion can conflict (the last active superuser). */
  deleteConflicts: boolean;
  /** The operations this kind has, with their summaries; a kind has no route for the others. */
  summaries: Partial<Record<AccountOperation, string>>;
}

const OWN_PROFILE_SUMMARY =
  'Change own names and/or password (with currentPassword; a new password ends every session, this one too)';

const USERS: AccountResource = {
  kind: 'user',
  tag: 'users',
  collectionId: 'UserCollection',
  create: CreateUserBody,
  update: UpdateUserBody,
  deleteConflicts: false,
  summaries: {
    'view-own': "The signed-in user's own account",
    'update-own': OWN_PROFILE_SUMMARY,
    'delete-own':
      'Delete own account, with currentPassword (anonymised; every token of it is refused from now on)',
    'change-identity-own':
      'Ask to change own address (with currentPassword): a link to confirm it is mailed there, a notice to the old one',
    list: 'List user accounts, paginated (?page, ?limit), searched (?search), filtered (?status), sorted (?sort)',
    create: 'Create a user account (status defaults to active; no mail is sent)',
    view: 'Read a user account (admins: any, deleted ones as their anonymised record; users: their own)',
    update:
      'Change a user account: names, identity, status, password (a new password, identity or status ends its sessions)',
    delete: 'Delete a user account (anonymised; its tokens are refused from now on)',
    activate: 'Activate a pending or inactive user account',
  },
};

/**
 * Any admin may read administrators and change the names of plain admins; only a superuser
 * creates or deletes admins, changes an admin's identity, password, status or roles, or
 * touches a superuser's account (an admin's own password goes through `/admins/my-account`,
 * with the current one), and the last active superuser can be neither deleted nor demoted.
 */
const ADMINS: AccountResource = {
  kind: 'admin',
  tag: 'admins',
  collectionId: 'AdminCollection',
  create: CreateAdminBody,
  update: UpdateAdminBody,
  deleteConflicts: true,
  summaries: {
    'view-own': "The signed-in administrator's own account",
    'update-own': OWN_PROFILE_SUMMARY,
    list: 'List administrator accounts, paginated (?page, ?limit), searched (?search), filtered (?status, ?role), sorted (?sort)',
    create: 'Create an administrator (superuser only; roles default to [admin])',
    view: 'Read an administrator account (deleted ones as their anonymised record)',
    update:
      "Change an administrator: names; identity, status, password, roles and superusers' accounts only by a superuser",
    delete: 'Delete an administrator (superuser only; anonymised; not the last active superuser)',
  },
};

const ACCOUNT = { schema: AccountSchema, contentType: HAL_JSON };

/** What every account route takes from its operation. */
interface OperationFacts {
  name: string;
  summary: string;
  tags: string[];
  permission: readonly Role[];
}

/**
 * The routes of one kind of account: declarations only, the account service decides. Routes
 * are tried in registration order and the first that matches answers; the operations on
 * one's own account come first, so `<base>/my-account` never reaches `<base>/:id`.
 */
function accountResourceRoutes(resource: AccountResource): AnyRoute[] {
  const { kind, tag, summaries } = resource;
  const base = `/${kind}s`;
  const routes: Record<AccountOperation, (facts: OperationFacts) => AnyRoute> = {
    'view-own': (facts) =>
      defineRoute({
        ...facts,
        method: 'GET',
        path: `${base}/my-account`,
        responses: { 200: { description: 'The account', ...ACCOUNT }, ...problems(401, 403, 503) },
        handler: ({ caller }, { accounts }) => accountReply(accounts[kind].viewOwn(caller), kind),
      }),
    'update-own': (facts) =>
      defineRoute({
        ...facts,
        method: 'PATCH',
        path: `${base}/my-account`,
        body: OwnProfileBody,
        responses: {
          200: { description: 'The updated account', ...ACCOUNT },
          ...problems(400, 401, 403, 413, 415, 503),
        },
        handler: async ({ caller, body }, { accounts }) =>
          accountReply(await accounts[kind].updateOwn(caller, body), kind),
      }),
    'delete-own': (facts) =>
      defineRoute({
        ...facts,
        method: 'DELETE',
        path: `${base}/my-account`,
        body: CurrentPasswordBody,
        responses: { 204: { description: 'Deleted' }, ...problems(400, 401, 403, 413, 415, 503) },
        async handler({ caller, body }, { accounts }) {
          await accounts[kind].removeOwn(caller, body);
          return { status: 204 };
        },
      }),
    'change-identity-own': (facts) =>
      defineRoute({
        ...facts,
        method: 'POST',
        path: `${base}/my-account/identity`,
        body: IdentityChangeBody,
        responses: {
          202: { description: 'Mailed: nothing changes until the link is used', schema: MessageSchema },
          ...problems(400, 401, 403, 413, 415, 503),
        },
        async handler({ caller, body }, { accountFlows }) {
          await accountFlows.requestIdentityChange(caller, body);
          return { status: 202, body: { message: IDENTITY_CHANGE_REQUESTED } };
        },
      }),
    list: (facts) =>
      defineRoute({
        ...facts,
        method: 'GET',
        path: base,
        query: accountListQuery(kind),
        responses: {
          200: {
            description: 'One page',
            schema: accountCollectionSchema(tag, resource.collectionId),
            contentType: HAL_JSON,
          },
          ...problems(400, 401, 403, 503),
        },
        async handler({ caller, query }, { accounts }) {
          const { items, total, page, limit } = await accounts[kind].list(caller, searchParamsObject(query));
          const body = halCollection({
            rel: tag,
            items: items.map((account) => accountResource(account, kind)),
            path: base,
            query,
            page,
            limit,
            total,
          });
          return { status: 200, contentType: HAL_JSON, body };
        },
      }),
    create: (facts) =>
      defineRoute({
        ...facts,
        method: 'POST',
        path: base,
        body: resource.create,
        responses: {
          201: { description: 'The account; Location names it', ...ACCOUNT, headers: LOCATION },
          ...problems(400, 401, 403, 409, 413, 415, 503),
        },
        handler: async ({ caller, body }, { accounts }) =>
          createdReply(await accounts[kind].create(caller, body), kind),
      }),
    view: (facts) =>
      defineRoute({
        ...facts,
        method: 'GET',
        path: `${base}/:id`,
        responses: { 200: { description: 'The account', ...ACCOUNT }, ...problems(401, 403, 404, 503) },
        handler: async ({ caller, params }, { accounts }) =>
          accountReply(await accounts[kind].view(caller, params.id ?? ''), kind),
      }),
    update: (facts) =>
      defineRoute({
        ...facts,
        method: 'PATCH',
        path: `${base}/:id`,
        body: resource.update,
        responses: {
          200: { description: 'The updated account', ...ACCOUNT },
          ...problems(400, 401, 403, 404, 409, 413, 415, 503),
        },
        handler: async ({ caller, params, body }, { accounts }) =>
          accountReply(await accounts[kind].update(caller, params.id ?? '', body), kind),
      }),
    delete: (facts) =>
      defineRoute({
        ...facts,
        method: 'DELETE',
        path: `${base}/:id`,
        responses: {
          204: { description: 'Deleted' },
          ...problems(401, 403, 404, ...(resource.deleteConflicts ? [409] : []), 503),
        },
        async handler({ caller, params }, { accounts }) {
          await accounts[kind].remove(caller, params.id ?? '');
          return { status: 204 };
        },
      }),
    activate: (facts) =>
      defineRoute({
        ...facts,
        method: 'POST',
        path: `${base}/:id/activate`,
        responses: {
          200: { description: 'The active account', ...ACCOUNT },
          ...problems(401, 403, 404, 503),
        },
        handler: async ({ caller, params }, { accounts }) =>
          accountReply(await accounts[kind].activate(caller, params.id ?? ''), kind),
      }),
  };
  return ACCOUNT_OPERATIONS.flatMap((operation) => {
    const summary = summaries[operation];
    if (summary === undefined) return [];
    const permission = ACCOUNT_PERMISSIONS[kind][operation];
    return [routes[operation]({ name: `${kind}::${operation}`, summary, tags: [tag], permission })];
  });
}

function accountCollectionSchema(rel: string, id: string): TSchema {
  const link = Type.Object({ href: Type.String() });
  return Type.Object(
    {
      _embedded: Type.Object({ [rel]: Type.Array(AccountSchema) }),
      page: Type.Integer(),
      limit: Type.Integer(),
      total: Type.Integer(),
      _links: Type.Object({
        self: link,
        first: link,
        last: link,
        prev: Type.Optional(link),
        next: Type.Optional(link),
      }),
    },
    { $id: id },
  );
}

export const userRoutes: readonly AnyRoute[] = accountResourceRoutes(USERS);
export const adminRoutes: readonly AnyRoute[] = accountResourceRoutes(ADMINS);
