# replayd and replayctl in a small image. Build: docker build -t replay .
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-dev libjq-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources Sources
COPY Tests Tests
COPY migrations migrations
# The build embeds migrations/ with the plugin in Plugins/ and its script in tools/.
COPY Plugins Plugins
COPY tools/embed-migrations.sh tools/
RUN swift build -c release --product replayd && swift build -c release --product replayctl \
    && mkdir /out && cp .build/release/replayd .build/release/replayctl /out/

FROM swift:6.3-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-0 libjq1 sqlite3 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
ENV REPLAY_SOCKET=/run/replay/replayd.sock REPLAY_DB=/data/replay.sqlite
VOLUME ["/data"]
ENTRYPOINT []
CMD ["replayd"]
