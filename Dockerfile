# syntax=docker/dockerfile:1
# The token service image: Node.js 24 runs the TypeScript sources directly (type stripping),
# so nothing is compiled; the build stage only type-checks them.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the lock file's packages (npm ci fails when package.json and the lock disagree).
# The lock carries Biome's binaries for glibc Linux only (the registry it was made against
# lacks the other platforms'), and npm ci refuses a lock that misses any optional package of
# a dependency; the image never lints, so Biome is dropped from package.json here first.
# No install scripts: the only one is the optional `node` package's, which fetches the Node.js
# the project pins for machines without it; this image has its own. sharp needs none: its
# libvips binaries are optional @img/* packages, npm picking the platform's (glibc, x64/arm64).
RUN npm pkg delete 'devDependencies[@biomejs/biome]' \
 && npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# A type error fails the image build rather than a running container.
RUN node_modules/.bin/tsc --noEmit -p .

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    KEYS_DIR=/app/keys \
    LOG_DIR=/app/log
WORKDIR /app
COPY package.json package-lock.json ./
# As above, production packages only. The optional `node` package stays an empty shell
# without its install script: the base image's Node.js runs the service.
RUN npm pkg delete 'devDependencies[@biomejs/biome]' \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force
COPY --from=build /app/src ./src
# What `npm start` and `npm run cli` run first; the entry point below runs node directly.
COPY scripts/check-node.cjs ./scripts/
COPY ops/docker-entrypoint.sh ./ops/docker-entrypoint.sh
# Empty key and log directories owned by the unprivileged user: a new named volume mounted
# here starts as a copy of them, so the service can write its key files and logs.
RUN mkdir -p /app/keys /app/log && chown node:node /app/keys /app/log && chmod 700 /app/keys
USER node
EXPOSE 8080
# The primary handles SIGTERM: workers finish in-flight requests within SHUTDOWN_GRACE.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/ops/docker-entrypoint.sh"]
