import { type TSchema, Type } from '@sinclair/typebox';
import { AVATAR_MEDIA_TYPES, type Avatar } from '../../accounts/avatar-store.ts';
import { AVATAR_PERMISSIONS, type AvatarOwner } from '../../accounts/avatars.ts';
import type { HeaderSpec, Reply, RequestContext } from '../route.ts';
import { type AnyRoute, defineRoute } from '../route.ts';
import { problems } from '../schemas.ts';
import { MULTIPART, readUpload } from '../upload.ts';

const FIELD = 'avatar';

/**
 * What an avatar is served with: its recognised media type, never sniffed into another
 * (`nosniff`), and a policy that forbids everything should it be opened as a document (no
 * script, no style, no plugin, a sandbox). No caching header: the service sends none.
 */
const IMAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; sandbox",
  'X-Content-Type-Options': 'nosniff',
} as const;

const DOCUMENTED_IMAGE_HEADERS: Readonly<Record<string, HeaderSpec>> = {
  'Content-Security-Policy': {
    description: 'Forbids everything, should the image be opened as a document',
    schema: Type.Literal(IMAGE_HEADERS['Content-Security-Policy']),
    required: true,
  },
  'X-Content-Type-Options': {
    description: 'The media type is the one the image was recognised as; never sniff another',
    schema: Type.Literal('nosniff'),
    required: true,
  },
};

const IMAGE = Type.String({
  description:
    'The uploaded image decoded and encoded again in its format: upright, at most AVATAR_MAX_SIDE pixels ' +
    'a side, its colour profile kept and no other metadata',
});

/** The upload's media types: a form with the file in `avatar`, or the image itself. */
const UPLOAD: Readonly<Record<string, TSchema>> = {
  [MULTIPART]: Type.Object(
    {
      [FIELD]: Type.String({
        contentMediaType: 'application/octet-stream',
        description: 'The image file: JPEG, PNG or WebP, recognised from its content',
      }),
    },
    { required: [FIELD] },
  ),
  ...Object.fromEntries(
    AVATAR_MEDIA_TYPES.map((type) => [
      type,
      Type.String({
        contentMediaType: type,
        description: 'The image itself; any of the three types is recognised from its content',
      }),
    ]),
  ),
};

function imageReply(avatar: Avatar): Reply {
  return { status: 200, contentType: avatar.mediaType, text: avatar.bytes, headers: IMAGE_HEADERS };
}

/** The three routes of one path: `/users/my-account/avatar` or `/users/:id/avatar`. */
function avatarRoutes(options: {
  path: string;
  names: { view: string; replace: string; delete: string };
  summaries: { view: string; replace: string; delete: string };
  permission: readonly AvatarPermission[];
  owner: (context: RequestContext) => AvatarOwner;
  /** The statuses of a target that may not exist (an id). */
  unknownTarget: number[];
}): AnyRoute[] {
  const { path, names, summaries, permission, owner, unknownTarget } = options;
  const common = { path, tags: ['users'], permission };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      name: names.view,
      summary: summaries.view,
      responses: {
        200: {
          description: 'The image, in the media type its content was recognised as',
          schema: IMAGE,
          contentType: AVATAR_MEDIA_TYPES,
          headers: DOCUMENTED_IMAGE_HEADERS,
        },
        ...problems(401, 403, 404, 503),
      },
      handler: async (context, { avatars }) => imageReply(await avatars.view(context.caller, owner(context))),
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      name: names.replace,
      summary: summaries.replace,
      upload: UPLOAD,
      responses: {
        204: { description: 'Stored; the account links it as `_links.avatar`' },
        // 503 also when too many uploads are being decoded at once.
        ...problems(400, 401, 403, ...unknownTarget, 413, 415, 503),
      },
      async handler(context, { avatars }) {
        const read = () =>
          readUpload(context.req, {
            field: FIELD,
            maxBytes: avatars.limits.bytes,
            rawTypes: AVATAR_MEDIA_TYPES,
          });
        await avatars.replace(context.caller, owner(context), read);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      name: names.delete,
      summary: summaries.delete,
      responses: {
        204: { description: 'The user has no avatar (any more)' },
        ...problems(401, 403, ...unknownTarget, 503),
      },
      async handler(context, { avatars }) {
        await avatars.remove(context.caller, owner(context));
        return { status: 204 };
      },
    }),
  ];
}

type AvatarPermission = (typeof AVATAR_PERMISSIONS)['any'][number];

/**
 * A user's own avatar first: routes are tried in order, and `/users/:id/avatar` would take
 * `my-account` for an id.
 */
export const userAvatarRoutes: readonly AnyRoute[] = [
  ...avatarRoutes({
    path: '/users/my-account/avatar',
    names: {
      view: 'user::view-own-avatar',
      replace: 'user::replace-own-avatar',
      delete: 'user::delete-own-avatar',
    },
    summaries: {
      view: "The signed-in user's avatar",
      replace: 'Set own avatar: a JPEG, PNG or WebP image, as a form (field `avatar`) or the raw image',
      delete: 'Remove own avatar',
    },
    permission: AVATAR_PERMISSIONS.own,
    owner: () => 'own',
    unknownTarget: [],
  }),
  ...avatarRoutes({
    path: '/users/:id/avatar',
    names: { view: 'user::view-avatar', replace: 'user::replace-avatar', delete: 'user::delete-avatar' },
    summaries: {
      view: "A user's avatar (admins: any user's; users: their own)",
      replace: "Set a user's avatar (admins: any user's; users: their own), as a form or the raw image",
      delete: "Remove a user's avatar (admins: any user's; users: their own)",
    },
    permission: AVATAR_PERMISSIONS.any,
    owner: ({ params }) => ({ id: params.id ?? '' }),
    unknownTarget: [404],
  }),
];
