# The pipeline's image, used by docker-compose.yml (services `pipeline` and `load`).
# Node 24 (the current long-term release); the project runs on Node 20.19 and later as well (package.json engines), and CI runs its unit tests on both.
FROM node:24-slim

WORKDIR /app
RUN chown node:node /app
USER node

# dependencies first, so that the layer is reused while only the sources change
COPY --chown=node:node package.json package-lock.json ./
COPY --chown=node:node patches/ patches/
RUN npm ci --no-audit --no-fund

COPY --chown=node:node . .

# Kafka, the registry, Redis and MinIO come from outside (compose services): never start a
# local stack from inside the container
ENV OZ0_STACK=external

CMD ["npm", "start"]
