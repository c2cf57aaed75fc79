# The flask-krm example application under gunicorn's gevent worker, as deploy/ runs it.
#
#   docker build -t flask-krm-example:0.1.0 .
#
# The base is Debian's own Python (bookworm: Python 3.11); BASE_IMAGE may name any Debian
# bookworm image, such as one made from Debian packages with debootstrap (docs/guide/deployment.md).
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml setup.cfg README.md ./
COPY flask_krm ./flask_krm
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check ".[redis]" "gunicorn[gevent]>=27" \
 && /opt/venv/bin/python -m compileall -q /opt/venv
COPY example_app /app/example_app
RUN /opt/venv/bin/python -m compileall -q /app/example_app

FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin app
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
# gunicorn runs without its control socket (by default in $HOME, which this user has not).
# The instance folder is written at run time (deploy/ mounts an emptyDir there, the root
# filesystem stays read-only).
RUN install -d -o 10001 -g 10001 -m 0700 /app/instance
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /app
USER 10001:10001
EXPOSE 8000
ENTRYPOINT ["gunicorn", "--config", "example_app/gunicorn_conf.py", "--bind", "0.0.0.0:8000", "--no-control-socket", "example_app:create_app()"]
