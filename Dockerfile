# syntax=docker/dockerfile:1
# The one ARO image: the controller (`aro-controller`) and the scale-set listener (`aro-listener`), both
# on PATH. The chart's Deployment runs `aro-controller`; the controller gives listener pods this same
# image (CONTROLLER_MANAGER_CONTAINER_IMAGE) and the command `aro-listener`.
#
# The base is the Node.js line the project pins for development and tests (package.json devDependency
# `node`), so the image runs on what the tests ran on.
ARG NODE_VERSION=24.21.0

# Compile with the full dependency set (TypeScript and tsc-alias).
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
COPY --from=build /src/dist ./dist
COPY package.json ./
# @aro/* as packages, each the controller's own compiled lib, for extension modules to require by name.
COPY image/packages/ ./node_modules/
COPY image/bin/aro-controller image/bin/aro-listener /usr/local/bin/
# The base image's unprivileged `node` user, by number so that `runAsNonRoot` can verify it.
USER 1000:1000
ENTRYPOINT []
CMD ["aro-controller"]
