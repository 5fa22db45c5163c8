# Goodput dashboard image: slim Python, installed from uv.lock, run as a non-root user.
# It serves on 0.0.0.0, so login and TLS are required: without the secrets file (README, "Login") mounted at
# /run/secrets/goodput.toml, and GOODPUT_BEHIND_TLS_PROXY=1 saying an ingress terminates TLS, the container
# exits at once with "goodput: error: ..." (status 2) instead of serving an open dashboard.
# Build: docker build -t goodput .
# Run:   docker run -p 8501:8501 -v goodput-store:/data -e GOODPUT_BEHIND_TLS_PROXY=1 \
#          -v "$PWD/secrets.toml:/run/secrets/goodput.toml:ro" goodput
# The base is pinned by digest (the tag moves with every rebuild): refresh it on purpose, with
# `docker buildx imagetools inspect python:3.11-slim`, and say so in the commit.
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_PROJECT_ENVIRONMENT=/opt/goodput \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    GOODPUT_STORE=/data/store \
    PATH=/opt/goodput/bin:$PATH

RUN pip install --no-cache-dir uv==0.13.8 \
    && useradd --create-home --uid 10001 goodput \
    && mkdir -p /data /app \
    && chown goodput:goodput /data

WORKDIR /app
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project
COPY engine ./engine
COPY dashboard ./dashboard
COPY data/presets ./data/presets
# only the settings: .streamlit/ is where the README puts secrets.toml, which must never enter a layer
COPY .streamlit/config.toml ./.streamlit/config.toml
RUN uv sync --frozen --no-dev

USER 10001
VOLUME ["/data"]
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"]
CMD ["goodput", "dashboard", "--host", "0.0.0.0", "--port", "8501", "--secrets", "/run/secrets/goodput.toml"]
