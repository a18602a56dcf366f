# syntax=docker/dockerfile:1
# The one ARO image: the controller (`aro-controller`) and the scale-set listener (`aro-listener`), both
# on PATH. The chart's Deployment runs `aro-controller`; the controller gives listener pods this same
# image (CONTROLLER_MANAGER_CONTAINER_IMAGE) and the command `aro-listener`.
#
# The base is the Node.js line the project pins for development and tests (package.json devDependency
# `node`), so the image runs on what the tests ran on.
ARG NODE_VERSION=24.21.0

# Compile the product with the full dependency set (TypeScript and tsc-alias): `npm run build` builds the
# applications nest-cli.json lists, the controller and the listener. The simulator, the sandbox, the
# chaos runner, the benches and the test fault switches run from source in development and never enter
# the build context (.dockerignore).
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json .swcrc nest-cli.json ./
COPY tools ./tools
COPY apps ./apps
COPY libs ./libs
RUN npm run build

# Production dependencies only, in a stage of their own so the compiler never reaches the image.
FROM node:${NODE_VERSION}-slim AS runtime-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:${NODE_VERSION}-slim
LABEL org.opencontainers.image.title="aro" \
      org.opencontainers.image.description="ARO, the Actions Runner Operator: controller and scale-set listener" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production \
    ARO_HOME=/app
WORKDIR /app
COPY --from=runtime-deps /app/node_modules ./node_modules
# The two apps by name, not all of dist/: the image holds the product and nothing a build might add beside
# it (test/integration/image/product-image.test.ts lists the image's files).
COPY --from=build /src/dist/apps/controller ./dist/apps/controller
COPY --from=build /src/dist/apps/listener ./dist/apps/listener
COPY package.json ./
# @aro/* as packages, each the controller's own compiled lib, for extension modules to require by name.
COPY image/packages/ ./node_modules/
COPY image/bin/aro-controller image/bin/aro-listener /usr/local/bin/
# The base image's unprivileged `node` user, by number so that `runAsNonRoot` can verify it.
USER 1000:1000
ENTRYPOINT []
CMD ["aro-controller"]
