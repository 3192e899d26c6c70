"""The deployment files: the Kubernetes manifest against its schema, the compose file, the nginx
template, the Dockerfile's hardening and the hashed lock file.

The Kubernetes schemas ship inside the ``kubernetes-validate`` package, so these checks run offline.
Only the lock's install check downloads (from PyPI), so it is marked ``slow``.
"""

import copy
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
_spec = importlib.util.spec_from_file_location("run_cluster", DEPLOY / "run_cluster.py")
run_cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_cluster)


def manifest() -> dict[str, dict]:
    docs = [doc for doc in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()) if doc]
    return {doc["kind"]: doc for doc in docs}


def test_kubernetes_manifest_passes_the_strict_schema():
    resources = manifest()
    assert set(resources) == {"Deployment", "Service", "ConfigMap", "Ingress"}
    for resource in resources.values():
        kubernetes_validate.validate(resource, kubernetes_validate.latest_version(), strict=True)


def test_the_schema_check_rejects_a_misspelled_field():
    service = copy.deepcopy(manifest()["Service"])
    service["spec"]["sessionAfinity"] = service["spec"].pop("sessionAffinity")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, kubernetes_validate.latest_version(), strict=True)


def test_kubernetes_pods_are_limited_probed_and_sticky():
    resources = manifest()
    pod = resources["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"]["memory"] and container["resources"]["limits"]["cpu"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/_stcore/health"
    assert container["livenessProbe"]["httpGet"]["path"] == "/_stcore/health"
    assert {"name": "MALLOC_ARENA_MAX", "value": "2"} in container["env"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert resources["Service"]["spec"]["sessionAffinity"] == "ClientIP"
    annotations = resources["Ingress"]["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert "frame-ancestors 'self'" in resources["ConfigMap"]["data"]["Content-Security-Policy"]


def test_compose_runs_replicas_behind_nginx_with_every_template_value():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    app, nginx = compose["services"]["app"], compose["services"]["nginx"]
    assert app["deploy"]["replicas"] >= 2
    assert app["mem_limit"] and app["environment"]["MALLOC_ARENA_MAX"] == "2"
    assert nginx["depends_on"]["app"]["condition"] == "service_healthy"
    assert "./nginx.conf.template:/etc/nginx/templates/nginx.conf.template:ro" in nginx["volumes"]
    placeholders = set(run_cluster.PLACEHOLDER.findall(run_cluster.TEMPLATE.read_text()))
    assert placeholders == {"EXPLORER_LISTEN", "EXPLORER_UPSTREAMS", "EXPLORER_RUNTIME_DIR"}
    assert placeholders <= nginx["environment"].keys()
    assert "server app:8501;" in nginx["environment"]["EXPLORER_UPSTREAMS"]


def test_render_fills_every_placeholder_and_refuses_a_missing_one():
    cluster = run_cluster.Cluster(2, port=8500, app_ports=[8601, 8602])
    try:
        conf = cluster.nginx_conf()
    finally:
        cluster.stop()
    assert not run_cluster.PLACEHOLDER.search(conf)
    assert "server 127.0.0.1:8601; server 127.0.0.1:8602;" in conf
    assert "listen 127.0.0.1:8500;" in conf
    with pytest.raises(ValueError, match="EXPLORER_LISTEN"):
        run_cluster.render("listen ${EXPLORER_LISTEN};", {})


def test_nginx_accepts_the_rendered_configuration():
    nginx = run_cluster.nginx_binary()
    if nginx is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nginx is missing in CI (.ci/run installs it)")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    cluster = run_cluster.Cluster(2)
    try:
        conf = cluster.runtime / "nginx.conf"
        conf.write_text(cluster.nginx_conf())
        check = subprocess.run(
            [nginx, "-t", "-p", str(cluster.runtime), "-c", str(conf), "-e", "stderr"],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        cluster.stop()
    assert check.returncode == 0, check.stderr


def test_dockerfile_pins_the_base_installs_the_lock_and_runs_unprivileged():
    dockerfile = (ROOT / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)", dockerfile, flags=re.MULTILINE)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base), base
    assert "--require-hashes" in dockerfile and "-r requirements.lock" in dockerfile
    assert "MALLOC_ARENA_MAX=2" in dockerfile
    assert "chown" not in dockerfile, "the app's code stays owned by root"
    users = re.findall(r"^USER (\S+)", dockerfile, flags=re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    assert dockerfile.index("COPY . .") < dockerfile.rindex("USER ")


def lock_pins() -> dict[str, tuple[str, list[str]]]:
    """requirements.lock as {name: (version, hashes)}."""
    text = (ROOT / "requirements.lock").read_text().replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec, *options = line.split()
        name, version = spec.split("==")
        pins[name.lower()] = (version, [o.removeprefix("--hash=sha256:") for o in options])
    return pins


def test_lock_pins_every_package_with_hashes_within_requirements():
    pins = lock_pins()
    for name, (_version, hashes) in pins.items():
        assert hashes, f"{name} has no hash"
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name
    assert pins["torch"][0] == "2.13.0+cpu", "the container installs the CPU build of torch"
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            version = Version(pins[requirement.name.lower()][0])
            assert requirement.specifier.contains(version), f"{requirement} vs lock {version}"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_lock_resolves_with_hashes_required():
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--require-hashes"]
    dry_run = subprocess.run(
        [*pip, "--only-binary", ":all:", "-q", "-r", str(ROOT / "requirements.lock")],
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert dry_run.returncode == 0, dry_run.stderr[-3000:]


def test_the_shipped_streamlit_settings_skip_the_full_collection_after_each_run():
    """``.streamlit/config.toml`` turns off Streamlit's ``gc.collect(2)`` after every script run: under a
    class it was 45% of the server's interpreter-lock time (BENCHMARKS.md, "A class on one link"). The
    option must be one this Streamlit knows, or the line would be ignored with only a warning."""
    import tomllib

    shipped = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert shipped["runner"]["postScriptGC"] is False
    read = "from streamlit import config; config.get_config_options(force_reparse=True); "
    read += "print(config.get_option('runner.postScriptGC'))"
    done = subprocess.run([sys.executable, "-c", read], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == "False"  # what a server started here (streamlit run) reads
