# Attention Explorer as a container: CPU-only torch. GPT-2's BPE rank file ships inside the
# attention package, so the running app needs no network.
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    XDG_CACHE_HOME=/app/.cache \
    KINETO_LOG_LEVEL=99

WORKDIR /app
COPY requirements.txt .
# The CPU wheel of torch (a plain `pip install torch` on Linux pulls a multi-GB CUDA build).
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install -r requirements.txt

COPY . .
RUN useradd --create-home explorer && chown -R explorer /app
USER explorer

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"
CMD ["streamlit", "run", "streamlit_app.py", "--server.address=0.0.0.0", "--server.port=8501"]
