# kinesis-esm as a service, with the shipping function's bootstrap (docs/production.md).
# Build: docker build -t shipping-esm .   Lint: scripts/lint-dockerfile

# The build stage: the workspace's two binaries, in release.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kinesis-esm -p shipping --bin kinesis-esm --bin bootstrap

# The final stage: the binaries on a slim Debian, run by a user with no privileges.
FROM debian:bookworm-slim
# ca-certificates: TLS to AWS; curl: the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates=20230311* curl=7.88.* \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /srv --shell /usr/sbin/nologin kinesis-esm
COPY --from=build /src/target/release/kinesis-esm /usr/local/bin/kinesis-esm
COPY --from=build /src/target/release/bootstrap /srv/functions/bootstrap
COPY template.yaml /srv/template.yaml
WORKDIR /srv
USER 10001
# The configuration beyond the template comes from the environment (docs/production.md):
# KINESIS_ESM_AWS=true and KINESIS_ESM_LEASE_TABLE=... at least, for real Kinesis and DynamoDB.
ENV KINESIS_ESM_TEMPLATE=/srv/template.yaml \
    KINESIS_ESM_LISTEN=0.0.0.0:4566 \
    KINESIS_ESM_PREBUILT_DIR=/srv/functions
EXPOSE 4566
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["curl", "-fsS", "http://127.0.0.1:4566/readyz"]
# SIGTERM: the batches in flight finish, the checkpoints land, the leases are given up.
STOPSIGNAL SIGTERM
ENTRYPOINT ["kinesis-esm", "run"]
