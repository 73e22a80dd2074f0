# Weft as a container image. Not built in CI here (the build machine has no container registry access);
# see "Running in production" (its "Docker and Compose" part) in the README.
#
#   docker build -t weft .
#   docker run -p 3000:3000 -v weft-data:/data weft             # embedded database in /data
#   docker run -e DATABASE_URL=... -e REDIS_URL=... weft api     # or: weft worker (see compose.yaml)

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: compile isolated-vm, TypeScript and the dashboard, then drop the dev dependencies ----
FROM ${NODE_IMAGE} AS build
# isolated-vm builds a native addon from source on install (node-gyp): python3, make and g++.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the package's own `prepare` script is a build, which needs the sources copied below.
# The reviewed dependency install scripts (package.json "allowScripts") run through `npm rebuild`:
# isolated-vm compiles its addon; msgpackr-extract (optional, used by bullmq's msgpackr) picks its prebuilt
# binary. esbuild's script is not needed: tsx and Vite (the dashboard build) call esbuild's JS API, which runs
# the binary of its platform package (@esbuild/linux-*), and neither is kept in the image.
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild isolated-vm msgpackr-extract
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
# `npm run build` also builds the dashboard (web/, Vite and React are dev dependencies) into web/dist.
COPY web ./web
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime: node, the production dependencies, the compiled program; no compiler, no root ----
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    WEFT_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The dashboard's static build; the server finds it at web/dist beside dist/ (WEFT_WEB_DIST overrides).
COPY --from=build /app/web/dist ./web/dist
COPY bin ./bin
COPY examples ./examples
# The embedded database (and the admin socket of the CLI) live in WEFT_DATA_DIR, owned by the
# unprivileged `node` user (uid 1000) of the base image.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# Ready = the database answers. `weft worker` serves no HTTP: compose.yaml disables this check there.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# isolated-vm needs --no-node-snapshot on Node 20; 4 MB semi-spaces keep the heaps of the main thread and the
# database thread about 40 MB smaller after load at no measured cost, and one V8 platform thread instead of four
# (a 2-core host gains nothing from more; their heaps and arenas cost memory) (bench/RESULTS.md). `docker run weft <command>` runs any CLI command
# (api, worker, migrate, keys create ...) in place of serve.
# glibc returns freed memory above 64 KB at the top of a heap, and keeps its mmap threshold at 128 KB, instead of
# raising it as large blocks are freed: the C heaps the threads filled while starting (V8's optimising compiler on
# the database's WebAssembly) give back about 20 MB (bench/RESULTS.md). The same as npm start's.
ENV MALLOC_TRIM_THRESHOLD_=65536
ENTRYPOINT ["node", "--no-node-snapshot", "--max-semi-space-size=4", "--heap-growing-percent=20", "--v8-pool-size=1", "dist/main.js"]
CMD ["serve"]
