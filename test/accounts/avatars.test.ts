/**
 * Avatars through the real server: uploads as a browser form or as the raw image, what is
 * accepted (by the bytes alone) and what is refused, what is made of the image (decoded, turned
 * upright, scaled down, encoded again without its metadata), how it is served, who may touch
 * whose, and that deleting a user leaves no image behind.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { BackendUnavailable } from '../../src/errors.ts';
import { MULTIPART_ALLOWANCE } from '../../src/http/upload.ts';
import { SEEDED_ADMIN } from '../support/http.ts';
import {
  GIF,
  HTML,
  JPEG,
  jpegBehindFillByte,
  jpegDeclaring,
  jpegSegment,
  jpegWithFillByte,
  jpegWithSegments,
  png,
  pngBehindCgbi,
  pngDeclaring,
  pngWithChunks,
  riffChunk,
  SVG,
  VP8X_EXIF,
  VP8X_ICC,
  VP8X_XMP,
  WEBP_LOSSLESS,
  WEBP_LOSSY,
  webpAnimated,
  webpExtended,
  webpLosslessDeclaring,
  webpLossyDeclaring,
} from '../support/images.ts';
import { backends, describeBackendSkip, startTestServer, type TestServer } from '../support/server.ts';
import { adminLogin, PASSWORD, storeAccount, userLogin } from './fixtures.ts';

/** Small, so that too large an image is cheap to send; BODY_LIMIT below it, which avatars do not obey. */
const AVATAR_SIZE_LIMIT = 32 * 1024;
const ENV = { AVATAR_SIZE_LIMIT: '32kb', BODY_LIMIT: '2kb' };

/** What an image is when decoded: its format, size, metadata and pixels (RGBA). */
async function decode(bytes: Buffer) {
  const metadata = await sharp(bytes).metadata();
  const pixels = await sharp(bytes).ensureAlpha().raw().toBuffer();
  return { metadata, pixels };
}

/**
 * The served image is the sent one, encoded again: the same format, size and pixels (within
 * what a lossy encoder changes, for JPEG and lossy WebP).
 */
async function assertSameImage(served: Buffer, sent: Buffer, label = ''): Promise<void> {
  const [a, b] = [await decode(served), await decode(sent)];
  assert.equal(a.metadata.format, b.metadata.format, label);
  assert.deepEqual([a.metadata.width, a.metadata.height], [b.metadata.width, b.metadata.height], label);
  const worst = a.pixels.reduce(
    (most, value, index) => Math.max(most, Math.abs(value - (b.pixels[index] ?? 0))),
    0,
  );
  // PNG is lossless; JPEG and WebP are encoded again lossy.
  const tolerance = a.metadata.format === 'png' ? 0 : 24;
  assert.ok(worst <= tolerance, `${label}: pixels differ by ${worst}`);
}

interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
  json(): Record<string, unknown>;
}

async function answer(response: Response): Promise<Answer> {
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    status: response.status,
    headers: response.headers,
    bytes,
    json: () => JSON.parse(bytes.toString('utf8')) as Record<string, unknown>,
  };
}

/** A part of a form: the file `name` carries, named and typed as the client says. */
interface FilePart {
  field: string;
  bytes: Buffer;
  fileName?: string;
  type?: string;
}

describeBackendSkip();

for (const backend of backends())
  describe(`avatars (${backend})`, () => {
    let server: TestServer;
    let admin: string;

    before(async () => {
      server = await startTestServer({ backend, env: ENV });
      admin = (await adminLogin(server.url, SEEDED_ADMIN.username, SEEDED_ADMIN.password)).access_token;
    });
    after(() => server.close());

    async function newUser(): Promise<{ id: string; token: string }> {
      const identity = `avatar-${randomUUID()}@example.com`;
      const account = await storeAccount(server.app.stores.users, (p) => server.app.passwords.hash(p), {
        identity,
      });
      return { id: account.id, token: (await userLogin(server.url, identity, PASSWORD)).access_token };
    }

    function call(method: string, path: string, token: string | undefined, init: RequestInit = {}) {
      const headers = new Headers(init.headers);
      if (token) headers.set('Authorization', `Bearer ${token}`);
      return fetch(`${server.url}${path}`, { ...init, method, headers }).then(answer);
    }

    const putRaw = (path: string, token: string | undefined, bytes: Buffer, type: string) =>
      call('PUT', path, token, { body: bytes, headers: { 'Content-Type': type } });

    /** What a browser sends for a form with file inputs (fetch builds the multipart body). */
    function putForm(path: string, token: string | undefined, parts: FilePart[], fields = {}) {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, String(value));
      for (const part of parts)
        form.append(
          part.field,
          new Blob([part.bytes], { type: part.type ?? 'application/octet-stream' }),
          part.fileName ?? 'avatar.png',
        );
      return call('PUT', path, token, { body: form });
    }

    const avatarOf = (path: string, token: string) => call('GET', path, token);

    /** DELETE /users/my-account, which asks for the password. */
    const deleteOwnAccount = (token: string) =>
      call('DELETE', '/users/my-account', token, {
        body: JSON.stringify({ currentPassword: PASSWORD }),
        headers: { 'Content-Type': 'application/json' },
      });

    function assertProblem(response: Answer, status: number, detail: RegExp): void {
      assert.equal(response.status, status, response.bytes.toString());
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.match(String(response.json().detail), detail);
    }

    test('each format is taken as the raw body and served encoded again in its format, the same image', async () => {
      const user = await newUser();
      for (const [bytes, type] of [
        [png(3, 2), 'image/png'],
        [JPEG, 'image/jpeg'],
        [WEBP_LOSSY, 'image/webp'],
        [WEBP_LOSSLESS, 'image/webp'],
      ] as const) {
        const put = await putRaw('/users/my-account/avatar', user.token, bytes, type);
        assert.equal(put.status, 204, put.bytes.toString());
        assert.equal(put.bytes.length, 0);
        const got = await avatarOf('/users/my-account/avatar', user.token);
        assert.equal(got.status, 200);
        assert.equal(got.headers.get('content-type'), type);
        await assertSameImage(got.bytes, bytes, type);
        assert.equal(got.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(got.headers.get('content-security-policy'), "default-src 'none'; sandbox");
        for (const caching of ['etag', 'last-modified', 'cache-control', 'expires'])
          assert.equal(got.headers.get(caching), null, caching);
      }
    });

    /**
     * What a phone or an editor writes into an image besides its pixels. Each must be gone
     * from what is served; the colour information and the pixels stay, byte for byte.
     */
    const GPS = Buffer.from('GPSLatitude 51/1 30/1 2/1 N GPSLongitude 0/1 7/1 28/1 W');
    const SERIAL = Buffer.from('BodySerialNumber 0123456789');
    const XMP = Buffer.from(
      'http://ns.adobe.com/xap/1.0/\0<x:xmpmeta><exif:GPSLatitude>51,30N</exif:GPSLatitude>',
    );
    const COMMENT = Buffer.from('Taken at home, 12 Privet Drive');
    const SECRETS = [GPS, SERIAL, XMP, COMMENT];
    const exif = Buffer.concat([Buffer.from('Exif\0\0MM\0*'), GPS, SERIAL]);
    const ICC = Buffer.concat([Buffer.from('ICC_PROFILE\0\x01\x01'), Buffer.alloc(40, 0x11)]);

    function assertNoMetadata(served: Buffer, label: string): void {
      for (const secret of SECRETS) assert.equal(served.includes(secret), false, `${label}: ${secret}`);
    }

    test('metadata is removed before the image is stored: no GPS position, serial, XMP or comment is served', async () => {
      const user = await newUser();
      const jpegKept = [jpegSegment(0xe2, ICC), jpegSegment(0xee, Buffer.from('Adobe\0\x64\0\0\0\0\x01'))];
      const cases = [
        {
          label: 'JPEG',
          type: 'image/jpeg',
          sent: jpegWithSegments(
            [
              jpegSegment(0xe1, exif),
              jpegKept[0] as Buffer,
              jpegSegment(0xe1, XMP),
              jpegSegment(0xed, Buffer.concat([Buffer.from('Photoshop 3.0\0'), COMMENT])),
              jpegSegment(0xe3, SERIAL),
              jpegKept[1] as Buffer,
              jpegSegment(0xef, GPS),
              jpegSegment(0xfe, COMMENT),
            ],
            // Another image after the end, as phones append one, with its own Exif.
            Buffer.concat([Buffer.of(0xff, 0xd8), jpegSegment(0xe1, exif), Buffer.of(0xff, 0xd9)]),
          ),
          kept: jpegWithSegments(jpegKept),
        },
        {
          label: 'PNG',
          type: 'image/png',
          sent: pngWithChunks(3, 2, [
            ['tEXt', Buffer.concat([Buffer.from('Comment\0'), COMMENT])],
            ['sRGB', Buffer.of(0)],
            ['zTXt', Buffer.concat([Buffer.from('Serial\0\0'), SERIAL])],
            ['iTXt', Buffer.concat([Buffer.from('XML:com.adobe.xmp\0\0\0\0\0'), XMP])],
            ['eXIf', Buffer.concat([Buffer.from('MM\0*'), GPS])],
            ['tIME', Buffer.of(0x07, 0xea, 11, 24, 23, 59, 0)],
          ]),
          kept: pngWithChunks(3, 2, [['sRGB', Buffer.of(0)]]),
        },
        {
          label: 'WebP',
          type: 'image/webp',
          sent: webpExtended(
            VP8X_ICC | VP8X_EXIF | VP8X_XMP,
            [riffChunk('ICCP', ICC)],
            [
              riffChunk('EXIF', Buffer.concat([Buffer.from('MM\0*'), GPS, SERIAL, Buffer.of(1)])),
              riffChunk('XMP ', XMP),
            ],
          ),
          kept: webpExtended(VP8X_ICC, [riffChunk('ICCP', ICC)], []),
        },
      ];
      for (const { label, type, sent, kept } of cases) {
        for (const secret of SECRETS.slice(0, 2))
          assert.ok(sent.includes(secret), `${label} carries it when sent`);
        assert.equal((await putRaw('/users/my-account/avatar', user.token, sent, type)).status, 204, label);
        const served = await avatarOf('/users/my-account/avatar', user.token);
        assert.equal(served.headers.get('content-type'), type, label);
        assertNoMetadata(served.bytes, label);
        await assertSameImage(served.bytes, kept, label);
        // As a form too.
        assert.equal(
          (await putForm('/users/my-account/avatar', user.token, [{ field: 'avatar', bytes: sent }])).status,
          204,
        );
        assertNoMetadata(
          await server.app.stores.avatars.find(user.id).then((a) => Buffer.from(a?.bytes ?? [])),
          label,
        );
      }
    });

    test('only what describes the pixels is kept: unknown and private parts go too, C2PA manifests among them', async () => {
      const user = await newUser();
      // A C2PA manifest (content credentials) records where and with what a picture was taken.
      const C2PA = Buffer.concat([Buffer.from('jumb c2pa.assertions stds.exif '), GPS]);
      const jfif = JPEG.subarray(6, 4 + JPEG.readUInt16BE(4));
      assert.equal(jfif.subarray(0, 5).toString('latin1'), 'JFIF\0');
      // The same JFIF header with a 1 × 1 thumbnail (3 bytes of RGB) after its fields.
      const withThumbnail = Buffer.concat([jfif.subarray(0, 12), Buffer.of(1, 1), Buffer.from('GPS')]);
      const jpegKept = [jpegSegment(0xe2, ICC), jpegSegment(0xee, Buffer.from('Adobe\0\x64\0\0\0\0\x01'))];
      const cases = [
        {
          label: 'JPEG',
          type: 'image/jpeg',
          sent: Buffer.concat([
            JPEG.subarray(0, 2),
            jpegSegment(0xe0, withThumbnail),
            jpegSegment(0xe0, Buffer.concat([Buffer.from('JFXX\0\x10'), SERIAL])),
            jpegSegment(0xe2, Buffer.concat([Buffer.from('MPF\0'), GPS])),
            jpegKept[0] as Buffer,
            jpegSegment(0xeb, C2PA),
            jpegSegment(0xee, Buffer.concat([Buffer.from('NotAdobe'), COMMENT])),
            jpegKept[1] as Buffer,
            JPEG.subarray(4 + JPEG.readUInt16BE(4)),
          ]),
          kept: jpegWithSegments(jpegKept),
        },
        {
          label: 'PNG',
          type: 'image/png',
          sent: pngWithChunks(3, 2, [
            ['caBX', C2PA],
            ['sRGB', Buffer.of(0)],
            ['prVt', Buffer.concat([Buffer.from('private '), SERIAL])],
            ['gAMA', Buffer.of(0, 0, 0xb1, 0x8f)],
            ['vpAg', COMMENT],
          ]),
          kept: pngWithChunks(3, 2, [
            ['sRGB', Buffer.of(0)],
            ['gAMA', Buffer.of(0, 0, 0xb1, 0x8f)],
          ]),
        },
        {
          label: 'WebP',
          type: 'image/webp',
          sent: webpExtended(
            VP8X_ICC | VP8X_EXIF,
            [riffChunk('ICCP', ICC), riffChunk('C2PA', C2PA)],
            [riffChunk('XYZW', Buffer.concat([SERIAL, Buffer.of(1)])), riffChunk('C2PA', COMMENT)],
          ),
          kept: webpExtended(VP8X_ICC, [riffChunk('ICCP', ICC)], []),
        },
      ];
      for (const { label, type, sent, kept } of cases) {
        assert.ok(sent.includes(GPS), `${label} carries it when sent`);
        assert.equal((await putRaw('/users/my-account/avatar', user.token, sent, type)).status, 204, label);
        const served = await avatarOf('/users/my-account/avatar', user.token);
        assertNoMetadata(served.bytes, label);
        await assertSameImage(served.bytes, kept, label);
      }
    });

    test('a JPEG loses its comments and application segments after its scan data too', async () => {
      const user = await newUser();
      // Where a progressive image has further scans, and tables and comments between them.
      const eoi = JPEG.length - 2;
      const sent = Buffer.concat([
        JPEG.subarray(0, eoi),
        jpegSegment(0xfe, COMMENT),
        jpegSegment(0xe1, exif),
        JPEG.subarray(eoi),
        COMMENT,
      ]);
      assert.equal((await putRaw('/users/my-account/avatar', user.token, sent, 'image/jpeg')).status, 204);
      const served = (await avatarOf('/users/my-account/avatar', user.token)).bytes;
      assertNoMetadata(served, 'JPEG');
      await assertSameImage(served, JPEG);
    });

    test('an image whose structure is malformed is refused with 400, and nothing is stored', async () => {
      const user = await newUser();
      const sos = JPEG.indexOf(Buffer.of(0xff, 0xda));
      const pngImage = png(2, 2);
      const badCrc = Buffer.from(pngImage);
      badCrc.writeUInt8(0xff ^ badCrc.readUInt8(pngImage.indexOf('IDAT') + 8), pngImage.indexOf('IDAT') + 8);
      const webp = webpExtended(VP8X_EXIF, [], [riffChunk('EXIF', GPS)]);
      const webpOver = Buffer.from(webp);
      webpOver.writeUInt32LE(0x7fff, webp.length - GPS.length - 4);
      // A RIFF that ends after the VP8X header, which names the dimensions: no picture.
      const webpBare = Buffer.from(webp);
      webpBare.writeUInt32LE(4 + 18, 4);
      for (const [label, type, bytes, detail] of [
        // A comment after the frame header whose length runs past the end.
        [
          'JPEG',
          'image/jpeg',
          Buffer.concat([JPEG.subarray(0, sos), Buffer.of(0xff, 0xfe, 0x40, 0), COMMENT]),
          /cannot be decoded as JPEG/,
        ],
        ['JPEG', 'image/jpeg', JPEG.subarray(0, sos), /cannot be decoded as JPEG/],
        [
          'JPEG',
          'image/jpeg',
          Buffer.concat([JPEG.subarray(0, sos), Buffer.of(0x00), JPEG.subarray(sos)]),
          /cannot be decoded as JPEG/,
        ],
        // Image data cut short, and a chunk whose checksum is wrong.
        ['PNG', 'image/png', pngImage.subarray(0, pngImage.indexOf('IDAT') + 10), /cannot be decoded as PNG/],
        ['PNG', 'image/png', badCrc, /cannot be decoded as PNG/],
        ['WebP', 'image/webp', webpOver, /cannot be decoded as WebP/],
        ['WebP', 'image/webp', webpBare, /cannot be decoded as WebP/],
      ] as const) {
        const response = await putRaw('/users/my-account/avatar', user.token, bytes, type);
        assert.equal(response.status, 400, `${label} ${detail}`);
        assertProblem(response, 400, detail);
        assert.equal(await server.app.stores.avatars.find(user.id), null, label);
      }
      assert.equal((await avatarOf('/users/my-account/avatar', user.token)).status, 404);
      // Nor does it replace an avatar the user has.
      await putRaw('/users/my-account/avatar', user.token, JPEG, 'image/jpeg');
      const before = (await avatarOf('/users/my-account/avatar', user.token)).bytes;
      assertProblem(
        await putRaw('/users/my-account/avatar', user.token, webpOver, 'image/webp'),
        400,
        /WebP/,
      );
      assert.deepEqual((await avatarOf('/users/my-account/avatar', user.token)).bytes, before);
      const own = await call('GET', '/users/my-account', user.token);
      assert.deepEqual((own.json()._links as Json).avatar, { href: `/users/${user.id}/avatar` });
    });

    test('a browser form: the file in the field avatar, its name and declared type ignored', async () => {
      const user = await newUser();
      const image = png(4, 4, [200, 10, 10]);
      const put = await putForm(
        '/users/my-account/avatar',
        user.token,
        [{ field: 'avatar', bytes: image, fileName: 'holiday.jpg', type: 'image/jpeg' }],
        { submit: 'Upload' },
      );
      assert.equal(put.status, 204, put.bytes.toString());
      const got = await avatarOf('/users/my-account/avatar', user.token);
      assert.equal(got.headers.get('content-type'), 'image/png', 'recognised by its bytes');
      await assertSameImage(got.bytes, image);
    });

    test('a raw body is recognised by its bytes, whatever type it declares among the three', async () => {
      const user = await newUser();
      assert.equal(
        (await putRaw('/users/my-account/avatar', user.token, png(2, 2), 'image/jpeg')).status,
        204,
      );
      const got = await avatarOf('/users/my-account/avatar', user.token);
      assert.equal(got.headers.get('content-type'), 'image/png');
      assert.equal((await putRaw('/users/my-account/avatar', user.token, JPEG, 'image/webp')).status, 204);
      assert.equal(
        (await avatarOf('/users/my-account/avatar', user.token)).headers.get('content-type'),
        'image/jpeg',
      );
    });

    test('HTML, SVG and GIF are refused with 415, whatever they claim to be, and nothing is stored', async () => {
      const user = await newUser();
      for (const [name, bytes] of [
        ['HTML', HTML],
        ['SVG', SVG],
        ['GIF', GIF],
      ] as const) {
        assertProblem(
          await putRaw('/users/my-account/avatar', user.token, bytes, 'image/png'),
          415,
          /JPEG, PNG or WebP/,
        );
        assertProblem(
          await putForm('/users/my-account/avatar', user.token, [
            { field: 'avatar', bytes, fileName: `${name}.png`, type: 'image/png' },
          ]),
          415,
          /JPEG, PNG or WebP/,
        );
      }
      // A body declared as anything but the three image types (or a form) is refused as it is.
      assertProblem(
        await putRaw('/users/my-account/avatar', user.token, png(1, 1), 'application/octet-stream'),
        415,
        /application\/octet-stream/,
      );
      assertProblem(await putRaw('/users/my-account/avatar', user.token, SVG, 'image/svg+xml'), 415, /svg/);
      assert.equal((await avatarOf('/users/my-account/avatar', user.token)).status, 404);
      const own = await call('GET', '/users/my-account', user.token);
      assert.equal((own.json()._links as Record<string, unknown>).avatar, undefined);
    });

    test(`up to AVATAR_SIZE_LIMIT (${AVATAR_SIZE_LIMIT} bytes here) is taken, however small BODY_LIMIT is; one byte more is 413`, async () => {
      const user = await newUser();
      const largest = png(8, 8, undefined, AVATAR_SIZE_LIMIT);
      assert.equal(largest.length, AVATAR_SIZE_LIMIT);
      assert.equal((await putRaw('/users/my-account/avatar', user.token, largest, 'image/png')).status, 204);
      const form = await putForm('/users/my-account/avatar', user.token, [
        { field: 'avatar', bytes: largest },
      ]);
      assert.equal(form.status, 204, form.bytes.toString());

      const over = png(8, 8, undefined, AVATAR_SIZE_LIMIT + 1);
      assertProblem(await putRaw('/users/my-account/avatar', user.token, over, 'image/png'), 413, /exceeds/);
      assertProblem(
        await putForm('/users/my-account/avatar', user.token, [{ field: 'avatar', bytes: over }]),
        413,
        /exceeds/,
      );
      // Sent in chunks without a declared length, it is refused as it arrives.
      const chunked = await call('PUT', '/users/my-account/avatar', user.token, {
        body: new Blob([over]).stream(),
        headers: { 'Content-Type': 'image/png' },
        duplex: 'half',
      } as RequestInit);
      assertProblem(chunked, 413, /exceeds/);
      // A form much larger than the file limit plus the room of a form is refused unread.
      assertProblem(
        await putForm('/users/my-account/avatar', user.token, [
          { field: 'avatar', bytes: Buffer.alloc(AVATAR_SIZE_LIMIT + MULTIPART_ALLOWANCE + 1) },
        ]),
        413,
        /exceeds/,
      );
      // The largest one stayed, without its padding: a private chunk, which is not the image.
      const served = (await avatarOf('/users/my-account/avatar', user.token)).bytes;
      assert.ok(served.length < 1024, `${served.length} bytes`);
      await assertSameImage(served, png(8, 8));
    });

    test('more than 4096 × 4096 pixels is refused with 400 before it is decoded, and nothing is stored', async () => {
      const user = await newUser();
      for (const [label, bytes, type] of [
        ['PNG 4097 × 4096', pngDeclaring(4097, 4096), 'image/png'],
        ['JPEG 8192 × 8192', jpegDeclaring(8192, 8192), 'image/jpeg'],
        ['WebP 16383 × 16383', webpLossyDeclaring(16383, 16383), 'image/webp'],
      ] as const) {
        assertProblem(
          await putRaw('/users/my-account/avatar', user.token, bytes, type),
          400,
          /more than 16777216 pixels/,
        );
        assert.equal(await server.app.stores.avatars.find(user.id), null, label);
      }
      assertProblem(
        await putRaw('/users/my-account/avatar', user.token, pngDeclaring(0, 10), 'image/png'),
        400,
        /cannot be decoded as PNG/,
      );
      assertProblem(
        await putRaw('/users/my-account/avatar', user.token, JPEG.subarray(0, 40), 'image/jpeg'),
        400,
        /cannot be decoded as JPEG/,
      );
    });

    /**
     * Images of 16384 pixels a side, whose headers are arranged so that a reader measuring one
     * header and a writer keeping another disagree: every one is refused and nothing is stored,
     * since what is measured is what is decoded.
     */
    test('a 16384-pixel-side image in any of the three formats, however its headers are arranged, is refused', async () => {
      // The JPEG's arrangement is larger than this suite's AVATAR_SIZE_LIMIT: a server with the default.
      const suiteServer = server;
      server = await startTestServer({ backend });
      try {
        await refusesEveryArrangement();
      } finally {
        await server.close();
        server = suiteServer;
      }
    });

    async function refusesEveryArrangement(): Promise<void> {
      const user = await newUser();
      for (const [label, bytes, type] of [
        ['PNG', pngDeclaring(16384, 16384), 'image/png'],
        // A leading CgBI chunk spelling a 1 × 1 header, then the real one.
        ['PNG behind CgBI', pngBehindCgbi(16384, 16384), 'image/png'],
        ['JPEG', jpegDeclaring(16384, 16384), 'image/jpeg'],
        // A fill byte before the real frame header, a fake 1 × 1 one after the end.
        ['JPEG with a fill byte', jpegBehindFillByte(16384, 16384), 'image/jpeg'],
        ['WebP lossless', webpLosslessDeclaring(16384, 16384), 'image/webp'],
        ['WebP lossy', webpLossyDeclaring(16383, 16383), 'image/webp'],
      ] as const) {
        for (const put of [
          () => putRaw('/users/my-account/avatar', user.token, bytes, type),
          () => putForm('/users/my-account/avatar', user.token, [{ field: 'avatar', bytes }]),
        ]) {
          const response = await put();
          assert.equal(response.status, 400, `${label}: ${response.bytes.toString()}`);
          assert.equal(await server.app.stores.avatars.find(user.id), null, label);
        }
      }
      const own = await call('GET', '/users/my-account', user.token);
      assert.equal((own.json()._links as Json).avatar, undefined);
    }

    test('a JPEG with a fill byte before a marker (T.81 B.1.1.2) is an ordinary JPEG', async () => {
      const user = await newUser();
      const put = await putRaw('/users/my-account/avatar', user.token, jpegWithFillByte(), 'image/jpeg');
      assert.equal(put.status, 204, put.bytes.toString());
      await assertSameImage((await avatarOf('/users/my-account/avatar', user.token)).bytes, JPEG);
    });

    test('Exif inside a frame of an animated WebP is not served', async () => {
      const user = await newUser();
      const exifInFrame = riffChunk('EXIF', Buffer.concat([Buffer.from('MM\0*'), GPS, SERIAL]));
      const sent = webpAnimated([exifInFrame, riffChunk('XMP ', XMP)], VP8X_EXIF | VP8X_XMP);
      assert.ok(sent.includes(GPS));
      const put = await putRaw('/users/my-account/avatar', user.token, sent, 'image/webp');
      assert.equal(put.status, 204, put.bytes.toString());
      const served = (await avatarOf('/users/my-account/avatar', user.token)).bytes;
      assertNoMetadata(served, 'animated WebP');
      const { metadata } = await decode(served);
      assert.equal(metadata.format, 'webp');
      assert.equal(metadata.exif, undefined);
      assert.equal(metadata.xmp, undefined);
    });

    test('a phone photo with Exif orientation 6 is served upright, without Exif, its colour profile kept', async () => {
      const user = await newUser();
      // Stored as the sensor saw it: 40 × 20, red on the left, blue on the right; orientation 6
      // says to turn it a quarter clockwise to view it, which puts red on top.
      const sensor = await sharp({ create: { width: 40, height: 20, channels: 3, background: '#0000ff' } })
        .composite([
          {
            input: { create: { width: 20, height: 20, channels: 3, background: '#ff0000' } },
            left: 0,
            top: 0,
          },
        ])
        .jpeg({ quality: 95 })
        .withIccProfile('p3')
        .withExif({ IFD0: { Make: 'PhoneMaker', Model: 'Phone 9' } })
        .withMetadata({ orientation: 6 })
        .toBuffer();
      const sent = await sharp(sensor).metadata();
      assert.deepEqual([sent.orientation, sent.width, sent.height], [6, 40, 20]);
      assert.ok(sent.exif && sent.icc);
      assert.equal((await putRaw('/users/my-account/avatar', user.token, sensor, 'image/jpeg')).status, 204);
      const served = (await avatarOf('/users/my-account/avatar', user.token)).bytes;
      const { metadata } = await decode(served);
      assert.deepEqual([metadata.width, metadata.height], [20, 40], 'upright: taller than wide');
      assert.equal(metadata.orientation, undefined);
      assert.equal(metadata.exif, undefined, 'no Exif');
      assert.ok(!served.includes(Buffer.from('PhoneMaker')));
      assert.ok(metadata.icc, 'the colour profile is kept');
      const { data, info } = await sharp(served)
        .toColourspace('srgb')
        .raw()
        .toBuffer({ resolveWithObject: true });
      const at = (x: number, y: number) => {
        const [red = 0, , blue = 0] = data.subarray((y * info.width + x) * info.channels);
        return { red, blue };
      };
      const [top, bottom] = [at(10, 5), at(10, 35)];
      assert.ok(top.red > 200 && top.blue < 60, `red on top: ${JSON.stringify(top)}`);
      assert.ok(bottom.blue > 200 && bottom.red < 60, `blue below: ${JSON.stringify(bottom)}`);
    });

    test('an image larger than AVATAR_MAX_SIDE is scaled down to it, its proportions kept; a smaller one never enlarged', async () => {
      const user = await newUser();
      const wide = await sharp({ create: { width: 1024, height: 256, channels: 3, background: '#2457c5' } })
        .png()
        .toBuffer();
      for (const [label, bytes, type, expected] of [
        ['PNG 1024 × 256', wide, 'image/png', [512, 128]],
        ['JPEG', await sharp(wide).jpeg().toBuffer(), 'image/jpeg', [512, 128]],
        ['WebP', await sharp(wide).rotate(90).webp().toBuffer(), 'image/webp', [128, 512]],
        ['small PNG', png(3, 2), 'image/png', [3, 2]],
      ] as const) {
        assert.equal((await putRaw('/users/my-account/avatar', user.token, bytes, type)).status, 204, label);
        const served = await avatarOf('/users/my-account/avatar', user.token);
        assert.equal(served.headers.get('content-type'), type, label);
        const { metadata } = await decode(served.bytes);
        assert.deepEqual([metadata.width, metadata.height], expected, label);
      }
    });

    test('forms without the field, with two files or a file elsewhere are refused with 400', async () => {
      const user = await newUser();
      const path = '/users/my-account/avatar';
      assertProblem(await putForm(path, user.token, [], { name: 'Ada', submit: 'Upload' }), 400, /no file/);
      // The field is the file, whatever its part says: text there is not an image.
      assertProblem(await putForm(path, user.token, [], { avatar: 'not a file' }), 415, /JPEG, PNG or WebP/);
      assertProblem(
        await putForm(path, user.token, [{ field: 'picture', bytes: png(1, 1) }]),
        400,
        /field "avatar"/,
      );
      assertProblem(
        await putForm(path, user.token, [
          { field: 'avatar', bytes: png(1, 1) },
          { field: 'avatar', bytes: png(2, 2) },
        ]),
        400,
        /more than one file/,
      );
      assertProblem(
        await putForm(path, user.token, [{ field: 'avatar', bytes: png(1, 1) }], {
          a: 1,
          b: 2,
          c: 3,
          d: 4,
          e: 5,
        }),
        400,
        /too many/,
      );
      assertProblem(
        await putForm(path, user.token, [{ field: 'avatar', bytes: Buffer.alloc(0) }]),
        400,
        /empty/,
      );
      assertProblem(
        await call('PUT', path, user.token, {
          body: 'x',
          headers: { 'Content-Type': 'multipart/form-data' },
        }),
        400,
        /form cannot be read/,
      );
      const cut = '--b\r\nContent-Disposition: form-data; name="avatar"; filename="a.png"\r\n\r\n\x89PNG';
      assertProblem(
        await call('PUT', path, user.token, {
          body: cut,
          headers: { 'Content-Type': 'multipart/form-data; boundary=b' },
        }),
        400,
        /form cannot be read|no file/,
      );
      assertProblem(await call('PUT', path, user.token), 400, /no body/);
      assert.equal((await avatarOf(path, user.token)).status, 404);
    });

    test('the account links its avatar while it has one, in lists too; DELETE removes it and is 204 again', async () => {
      const user = await newUser();
      const links = async () => (await call('GET', '/users/my-account', user.token)).json()._links as Json;
      assert.equal((await links()).avatar, undefined);
      await putRaw('/users/my-account/avatar', user.token, png(2, 2), 'image/png');
      assert.deepEqual((await links()).avatar, { href: `/users/${user.id}/avatar` });
      const listed = await call('GET', '/users?limit=100&sort=-createdAt', admin);
      const item = (listed.json()._embedded as Json).users.find((account: Json) => account.id === user.id);
      assert.deepEqual(item._links.avatar, { href: `/users/${user.id}/avatar` });
      // The link leads to the image, for the user themselves too.
      assert.equal((await avatarOf(`/users/${user.id}/avatar`, user.token)).status, 200);

      assert.equal((await call('DELETE', '/users/my-account/avatar', user.token)).status, 204);
      assert.equal((await avatarOf('/users/my-account/avatar', user.token)).status, 404);
      assert.equal((await links()).avatar, undefined);
      assert.equal((await call('DELETE', '/users/my-account/avatar', user.token)).status, 204, 'idempotent');
    });

    test("user A cannot see, set or remove user B's avatar (403), and B's stays as it was", async () => {
      const [a, b] = [await newUser(), await newUser()];
      await putRaw('/users/my-account/avatar', b.token, JPEG, 'image/jpeg');
      const before = (await avatarOf('/users/my-account/avatar', b.token)).bytes;
      const path = `/users/${b.id}/avatar`;
      assertProblem(await avatarOf(path, a.token), 403, /own avatar/);
      assertProblem(await putRaw(path, a.token, png(1, 1), 'image/png'), 403, /own avatar/);
      assertProblem(await call('DELETE', path, a.token), 403, /own avatar/);
      // Not even whether an id exists.
      assertProblem(await avatarOf(`/users/${randomUUID()}/avatar`, a.token), 403, /own avatar/);
      assert.deepEqual((await avatarOf('/users/my-account/avatar', b.token)).bytes, before);
      // Administrators have no avatar of their own; a guest none at all.
      assert.equal((await avatarOf('/users/my-account/avatar', admin)).status, 403);
      assert.equal((await call('GET', path, undefined)).status, 401);
      assert.equal((await putRaw(path, undefined, png(1, 1), 'image/png')).status, 401);
    });

    test("an administrator sees, sets and removes any user's avatar; an unknown user is 404", async () => {
      const user = await newUser();
      const path = `/users/${user.id}/avatar`;
      assertProblem(await avatarOf(path, admin), 404, /No avatar/);
      assert.equal((await putForm(path, admin, [{ field: 'avatar', bytes: WEBP_LOSSY }])).status, 204);
      await assertSameImage((await avatarOf('/users/my-account/avatar', user.token)).bytes, WEBP_LOSSY);
      assert.equal((await avatarOf(path, admin)).headers.get('content-type'), 'image/webp');
      assert.equal((await call('DELETE', path, admin)).status, 204);
      assert.equal((await avatarOf('/users/my-account/avatar', user.token)).status, 404);
      for (const id of [randomUUID(), 'not-an-id']) {
        assertProblem(
          await putRaw(`/users/${id}/avatar`, admin, png(1, 1), 'image/png'),
          404,
          /No such user/,
        );
        assertProblem(await call('DELETE', `/users/${id}/avatar`, admin), 404, /No such user/);
        assertProblem(await avatarOf(`/users/${id}/avatar`, admin), 404, /No avatar|No such user/);
      }
    });

    test('deleting a user, by themselves or by an administrator, removes the avatar', async () => {
      for (const deletion of ['self', 'admin'] as const) {
        const user = await newUser();
        await putRaw('/users/my-account/avatar', user.token, png(2, 2), 'image/png');
        assert.ok(await server.app.stores.avatars.find(user.id));
        const deleted =
          deletion === 'self'
            ? await deleteOwnAccount(user.token)
            : await call('DELETE', `/users/${user.id}`, admin);
        assert.equal(deleted.status, 204, deleted.bytes.toString());
        assert.equal(await server.app.stores.avatars.find(user.id), null, deletion);
        assertProblem(await avatarOf(`/users/${user.id}/avatar`, admin), 404, /No avatar/);
        const record = (await call('GET', `/users/${user.id}`, admin)).json();
        assert.equal(record.status, 'deleted');
        assert.equal((record._links as Json).avatar, undefined);
        assertProblem(
          await putRaw(`/users/${user.id}/avatar`, admin, png(1, 1), 'image/png'),
          404,
          /No such user/,
        );
      }
    });

    test('when the avatar cannot be removed, the account is not deleted either, and the retry does both', async () => {
      const user = await newUser();
      await putRaw('/users/my-account/avatar', user.token, png(2, 2), 'image/png');
      const { avatars } = server.app.stores;
      const remove = avatars.delete;
      avatars.delete = async () => {
        throw new BackendUnavailable('MongoDB');
      };
      try {
        assert.equal((await deleteOwnAccount(user.token)).status, 503);
      } finally {
        avatars.delete = remove;
      }
      assert.equal((await call('GET', '/users/my-account', user.token)).json().status, 'active');
      assert.equal((await deleteOwnAccount(user.token)).status, 204);
      assert.equal(await avatars.find(user.id), null);
    });

    test('uploads and removals of one avatar at once: every interleaving leaves the account and the image in agreement', async () => {
      const user = await newUser();
      const path = '/users/my-account/avatar';
      const { avatars, users } = server.app.stores;
      const originals = {
        put: avatars.put,
        delete: avatars.delete,
        update: users.update,
        writeAvatarFlag: users.writeAvatarFlag,
      };
      // A random pause before each write, so that the requests
      // interleave in ever other orders (what is asserted is the state they leave, never how
      // long they took).
      const pause = () => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
      avatars.put = async (...args) => {
        await pause();
        return originals.put.apply(avatars, args);
      };
      avatars.delete = async (...args) => {
        await pause();
        return originals.delete.apply(avatars, args);
      };
      users.update = async (...args) => {
        await pause();
        return originals.update.apply(users, args);
      };
      users.writeAvatarFlag = async (...args) => {
        await pause();
        return originals.writeAvatarFlag.apply(users, args);
      };
      const put = (n: number) => putRaw(path, user.token, png(1 + (n % 3), 1), 'image/png');
      const remove = () => call('DELETE', path, user.token);
      const rounds: (() => Promise<Answer>)[][] = [
        [() => put(0), remove],
        [remove, () => put(1)],
        [() => put(2), () => put(3)],
        [() => put(4), remove, () => put(5), remove],
      ];
      try {
        for (let i = 0; i < 60; i++) {
          const round = rounds[i % rounds.length] ?? [];
          for (const answered of await Promise.all(round.map((request) => request())))
            assert.equal(answered.status, 204, answered.bytes.toString());
          const hasAvatar = (await users.findById(user.id))?.hasAvatar;
          const image = await avatars.find(user.id);
          assert.equal(
            hasAvatar,
            image !== null,
            `round ${i}: hasAvatar ${hasAvatar}, image ${image !== null}`,
          );
        }
      } finally {
        Object.assign(avatars, { put: originals.put, delete: originals.delete });
        Object.assign(users, { update: originals.update, writeAvatarFlag: originals.writeAvatarFlag });
      }
      // And as a client sees it: the link leads to the image exactly when there is one.
      const linked = ((await call('GET', '/users/my-account', user.token)).json()._links as Json).avatar;
      assert.equal(linked !== undefined, (await avatarOf(path, user.token)).status === 200);
    });

    test('an upload still arriving while its user is deleted leaves no image behind (404)', async () => {
      const user = await newUser();
      const image = png(16, 16);
      const { hostname, port } = new URL(server.url);
      const upload = httpRequest({
        hostname,
        port,
        method: 'PUT',
        path: '/users/my-account/avatar',
        headers: {
          Authorization: `Bearer ${user.token}`,
          'Content-Type': 'image/png',
          'Content-Length': image.length,
        },
      });
      const answered = new Promise<number>((resolve, reject) => {
        upload.on('response', (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        upload.on('error', reject);
      });
      // Half the image: the server has checked the caller and reads the rest as it comes.
      upload.write(image.subarray(0, 20));
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal((await call('DELETE', `/users/${user.id}`, admin)).status, 204);
      upload.end(image.subarray(20));
      assert.equal(await answered, 404);
      assert.equal(await server.app.stores.avatars.find(user.id), null);
      const record = (await call('GET', `/users/${user.id}`, admin)).json();
      assert.equal((record._links as Json).avatar, undefined);
    });
  });

// biome-ignore lint/suspicious/noExplicitAny: untyped JSON, navigated as the API documents it
type Json = any;
