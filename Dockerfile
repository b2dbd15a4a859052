# Attache service image. Build: the same `make` targets a developer runs; runtime: slim Debian with
# the runtime libraries only, a non-root user, and a health check.
FROM swift:6.0-bookworm AS build
WORKDIR /src
COPY . .
RUN make build-static

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl libcurl4 libjpeg62-turbo libpng16-16 libgif7 \
      libavformat59 libavcodec59 libswscale6 libavutil57 libnats3.4 libseccomp2 \
      libheif1 libavif15 libwebp7 libwebpdemux2 libjxl0.7 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/attache --create-home attache \
 && mkdir -p /var/lib/attache/media && chown attache /var/lib/attache/media
# attache serve and attache worker run attache-serve from the same directory, and it starts its
# sandboxed decoders, attache-decode, from there.
COPY --from=build /src/.build-static/release/attache /src/.build-static/release/attache-serve /src/.build-static/release/attache-decode /usr/local/bin/
USER attache
VOLUME /var/lib/attache/media
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=2s CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["attache"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--media-dir", "/var/lib/attache/media"]
