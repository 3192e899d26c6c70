# Attention Explorer as a container: CPU-only torch, every package pinned by hash, code owned by
# root and run by an unprivileged user. GPT-2's BPE rank file ships inside the attention package,
# so the running app needs no network.
#
# The base image is pinned to an exact Python and Debian release. To pin it by digest too, look the
# digest up where you can reach Docker Hub and write it after the tag (docs/deployment.md, "Container"):
#   docker buildx imagetools inspect python:3.11.14-slim-bookworm
#   FROM python:3.11.14-slim-bookworm@sha256:<the index digest it prints>
FROM python:3.11.14-slim-bookworm

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    KINETO_LOG_LEVEL=99 \
    # Fewer malloc arenas: the server's memory grows more slowly under a class (BENCHMARKS.md, "Load").
    MALLOC_ARENA_MAX=2

WORKDIR /app
# requirements.lock pins every package, and the CPU build of torch, with sha256 hashes for
# linux/amd64 and Python 3.11 (docs/deployment.md, "Container", says how to regenerate it).
COPY requirements.lock .
RUN pip install --require-hashes --only-binary :all: --no-deps \
      --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.lock

# The code stays owned by root and read-only to the user that runs it; byte-code is compiled now,
# since that user cannot write it.
COPY . .
RUN python -m compileall -q /app \
 && chmod -R a+rX,go-w /app \
 && useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin explorer
USER explorer

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"
CMD ["streamlit", "run", "streamlit_app.py", "--server.address=0.0.0.0", "--server.port=8501"]
