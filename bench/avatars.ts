/**
 * Avatar uploads: what one costs, and what 20 at once do to everyone else. The upload is a
 * photo as a phone sends it: a 4096 × 4096 JPEG of about 1 MB (AVATAR_SIZE_LIMIT's default),
 * which the service decodes, scales to AVATAR_MAX_SIDE and encodes again. The service runs as
 * it is deployed (its entry point, 1 worker, memory stores).
 *
 * - one upload at a time: its latency (median, 99th percentile) and the server's CPU per upload;
 * - `GET /` at a fixed rate, alone and while 20 connections upload without pause, in
 *   interleaved slices: the p99 of `GET /` shows whether decoding stalls the event loop.
 *
 * Runs on its own too (`node bench/avatars.ts`), printing its rows.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import sharp from 'sharp';
import { cpuDuring, processTree } from './cpu.ts';
import { interleaved, load, log, type Measurement, ours, passwordGrant, SLICE } from './load.ts';
import { startService, stopAll } from './servers.ts';

export interface AvatarRow {
  name: string;
  setup: string;
  m: Measurement;
}

const SIDE = 4096;
const UPLOAD_BYTES = 1_000_000;
/** Uploads at once in the loaded slices: the 20 connections. */
const CONCURRENT_UPLOADS = 20;
/** `GET /` in every slice: a steady rate well below what one worker serves, so p99 is latency, not queueing. */
const HOME_RATE = 500;
const HOME_CONNECTIONS = 4;
const SEQUENTIAL_UPLOADS = 20;

/**
 * A 4096 × 4096 JPEG of at most UPLOAD_BYTES: smooth random colour (noise scaled up), the
 * highest quality that fits, as a camera's detail fills its file.
 */
async function photo(): Promise<Buffer> {
  const grain = 48;
  const source = sharp(randomBytes(grain * grain * 3), { raw: { width: grain, height: grain, channels: 3 } })
    .resize(SIDE, SIDE, { kernel: 'cubic' })
    .raw();
  const pixels = await source.toBuffer();
  for (let quality = 95; quality > 30; quality -= 5) {
    const jpeg = await sharp(pixels, { raw: { width: SIDE, height: SIDE, channels: 3 } })
      .jpeg({ quality })
      .toBuffer();
    if (jpeg.length <= UPLOAD_BYTES) return jpeg;
  }
  throw new Error('no quality makes the photo small enough');
}

export async function measureAvatars(): Promise<AvatarRow[]> {
  const image = await photo();
  const setup = `1 worker, memory; ${SIDE} × ${SIDE} JPEG of ${(image.length / 1e6).toFixed(2)} MB`;
  const service = await startService({});
  const { access_token: token } = await passwordGrant(ours(service.url));
  const avatarUrl = `${service.url}/users/my-account/avatar`;
  const upload = { method: 'PUT' as const, body: image, headers: { 'content-type': 'image/jpeg' } };
  const authorization = { authorization: `Bearer ${token}` };
  const uploads = (connections: number, options: { amount?: number; seconds?: number }) =>
    load(avatarUrl, { connections, headers: authorization, requests: [upload], ...options });
  const home = () =>
    load(service.url, { connections: HOME_CONNECTIONS, overallRate: HOME_RATE, seconds: SLICE });

  log('avatars: warm-up');
  await uploads(1, { amount: 2 });
  await home();

  log(`avatars: ${SEQUENTIAL_UPLOADS} uploads, one at a time`);
  const single = await cpuDuring({ server: processTree(service.pid) }, () =>
    uploads(1, { amount: SEQUENTIAL_UPLOADS }),
  );
  const one: Measurement = {
    ...single.result,
    serverMsPerRequest: ((single.seconds.server ?? 0) * 1000) / Math.max(single.result.ok, 1),
  };

  let loadedUploads: Measurement[] = [];
  const paired = await interleaved(`avatars: GET / alone and beside ${CONCURRENT_UPLOADS} uploads`, {
    alone: home,
    loaded: async () => {
      const [measured, uploaded] = await Promise.all([
        home(),
        uploadsOnThread(avatarUrl, image, authorization, CONCURRENT_UPLOADS),
      ]);
      loadedUploads = [...loadedUploads, uploaded];
      return measured;
    },
  });
  const uploadsDone = loadedUploads.reduce((sum, m) => sum + m.ok, 0);
  const refused = loadedUploads.reduce((sum, m) => sum + m.failures, 0);
  return [
    { name: 'PUT avatar, one at a time', setup, m: one },
    { name: `GET / at ${HOME_RATE}/s, alone`, setup: '1 worker, memory', m: paired.alone },
    {
      name: `GET / at ${HOME_RATE}/s, beside ${CONCURRENT_UPLOADS} concurrent uploads`,
      setup: `${setup}; ${uploadsDone} uploads stored, ${refused} refused or failed meanwhile`,
      m: paired.loaded,
    },
  ];
}

/**
 * The concurrent uploads, sent from a thread of their own: pushing 20 MB a second through this
 * thread's event loop would delay the `GET /` answers it times, and count against the service.
 * (In a worker thread autocannon reports raw histograms, not percentiles: only the counts.)
 */
function uploadsOnThread(
  url: string,
  image: Buffer,
  headers: Record<string, string>,
  connections: number,
): Promise<Measurement> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(
      `const { parentPort, workerData: w } = require('node:worker_threads');
       require(w.autocannon)({
         url: w.url, connections: w.connections, duration: w.seconds, timeout: 20,
         requests: [{ method: 'PUT', body: Buffer.from(w.image),
                      headers: { ...w.headers, 'content-type': 'image/jpeg' } }],
       }).then((r) => parentPort.postMessage({
         rps: r['2xx'] / w.seconds, p50: 0, p99: 0,
         failures: r.non2xx + r.errors + r.timeouts, ok: r['2xx'],
       }));`,
      {
        eval: true,
        workerData: {
          autocannon: createRequire(import.meta.url).resolve('autocannon'),
          url,
          image,
          headers,
          connections,
          seconds: SLICE,
        },
      },
    );
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

if (import.meta.main) {
  try {
    const rows = await measureAvatars();
    console.log('| row | setup | req/s | p50 ms | p99 ms | failures | server CPU ms/req |');
    console.log('|---|---|---|---|---|---|---|');
    for (const { name, setup, m } of rows)
      console.log(
        `| ${name} | ${setup} | ${m.rps.toFixed(1)} | ${m.p50} | ${m.p99} | ${m.failures} | ${m.serverMsPerRequest?.toFixed(1) ?? ''} |`,
      );
  } finally {
    await stopAll();
  }
}
