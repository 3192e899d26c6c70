"""The deployment files: the Kubernetes manifest against its schema, the compose file, the nginx
template, the Dockerfile's hardening and the hashed lock file. In compose and Kubernetes the app's
``ATTENTION_ROOMS_URL`` must reach the Redis that holds the live rooms.

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
from urllib.parse import urlsplit

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


APP = "attention-explorer"
REDIS_IMAGE = re.compile(r"redis:\d+-alpine")  # the official image, pinned to a major version


def manifest() -> dict[tuple[str, str], dict]:
    """deploy/kubernetes.yaml as {(kind, name): resource}."""
    docs = [doc for doc in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()) if doc]
    resources = {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}
    assert len(resources) == len(docs), "two resources share a kind and a name"
    return resources


def compose_file() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_kubernetes_manifest_passes_the_strict_schema():
    resources = manifest()
    assert set(resources) == {
        ("Deployment", APP),
        ("Service", APP),
        ("ConfigMap", "attention-explorer-headers"),
        ("Ingress", APP),
        ("Deployment", "redis"),
        ("Service", "redis"),
    }
    for resource in resources.values():
        kubernetes_validate.validate(resource, kubernetes_validate.latest_version(), strict=True)


def test_the_schema_check_rejects_a_misspelled_field():
    service = copy.deepcopy(manifest()["Service", APP])
    service["spec"]["sessionAfinity"] = service["spec"].pop("sessionAffinity")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, kubernetes_validate.latest_version(), strict=True)


def test_kubernetes_pods_are_limited_probed_and_sticky():
    resources = manifest()
    pod = resources["Deployment", APP]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"]["memory"] and container["resources"]["limits"]["cpu"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/_stcore/health"
    assert container["livenessProbe"]["httpGet"]["path"] == "/_stcore/health"
    assert {"name": "MALLOC_ARENA_MAX", "value": "2"} in container["env"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert resources["Service", APP]["spec"]["sessionAffinity"] == "ClientIP"
    annotations = resources["Ingress", APP]["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    headers = resources["ConfigMap", "attention-explorer-headers"]["data"]
    assert "frame-ancestors 'self'" in headers["Content-Security-Policy"]


def check_kubernetes_rooms(resources: dict[tuple[str, str], dict]) -> None:
    """The app's ATTENTION_ROOMS_URL names a ClusterIP Service whose port leads to Redis's port in the
    Redis pods, and to no other pod."""
    (app,) = resources["Deployment", APP]["spec"]["template"]["spec"]["containers"]
    env = {variable["name"]: variable["value"] for variable in app["env"]}
    assert "ATTENTION_ROOMS_URL" in env, "the app would keep its rooms in each pod's memory"
    url = urlsplit(env["ATTENTION_ROOMS_URL"])
    assert (url.scheme, url.path) == ("redis", "/0")
    assert ("Service", url.hostname) in resources, f"no Service is called {url.hostname}"
    service = resources["Service", url.hostname]["spec"]
    assert service.get("type", "ClusterIP") == "ClusterIP"
    ports = [port for port in service["ports"] if port["port"] == url.port]
    assert ports, f"the Service {url.hostname} has no port {url.port}"
    selected = [
        deployment
        for (kind, _name), deployment in resources.items()
        if kind == "Deployment"
        and service["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    ]
    assert [deployment["metadata"]["name"] for deployment in selected] == ["redis"]
    (redis,) = selected[0]["spec"]["template"]["spec"]["containers"]
    assert REDIS_IMAGE.fullmatch(redis["image"]), redis["image"]
    named = {port["name"]: port["containerPort"] for port in redis["ports"]}
    target = ports[0]["targetPort"]
    assert named.get(target, target) == 6379, "the Service must lead to Redis's port"
    assert "--port" not in redis.get("args", []), "Redis listens on its default port, 6379"


def test_kubernetes_app_keeps_its_rooms_in_the_redis_service():
    check_kubernetes_rooms(manifest())


def _set_rooms_url(url):
    def change(resources):
        (app,) = resources["Deployment", APP]["spec"]["template"]["spec"]["containers"]
        app["env"] = [v for v in app["env"] if v["name"] != "ATTENTION_ROOMS_URL"]
        if url is not None:
            app["env"].append({"name": "ATTENTION_ROOMS_URL", "value": url})

    return change


def _set_redis_service(**spec):
    def change(resources):
        resources["Service", "redis"]["spec"].update(spec)

    return change


@pytest.mark.parametrize(
    "change",
    [
        _set_rooms_url(None),
        _set_rooms_url("redis://localhost:6379/0"),
        _set_rooms_url("redis://redis:6380/0"),
        lambda resources: resources.pop(("Service", "redis")),
        _set_redis_service(selector={"app.kubernetes.io/name": APP}),
        _set_redis_service(ports=[{"name": "redis", "port": 6379, "targetPort": 6380}]),
        _set_redis_service(type="NodePort"),
    ],
    ids=["no-url", "other-host", "other-port", "no-service", "selects-the-app", "wrong-target", "node-port"],
)
def test_the_rooms_check_rejects_an_app_that_misses_redis(change):
    resources = copy.deepcopy(manifest())
    change(resources)
    with pytest.raises(AssertionError):
        check_kubernetes_rooms(resources)


def test_kubernetes_redis_is_one_unprivileged_probed_pod_that_keeps_an_append_only_file():
    deployment = manifest()["Deployment", "redis"]
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"]["type"] == "Recreate", "never two stores at once"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 999, "the official image's redis user"
    (redis,) = pod["containers"]
    assert redis["readinessProbe"]["exec"]["command"] == ["redis-cli", "ping"]
    assert redis["resources"]["limits"]["memory"] and redis["resources"]["limits"]["cpu"]
    assert redis["securityContext"]["allowPrivilegeEscalation"] is False
    assert "--appendonly" in redis["args"]
    assert redis["args"][redis["args"].index("--appendonly") + 1] == "yes"
    assert {"name": "data", "mountPath": "/data"} in redis["volumeMounts"]


def test_compose_runs_replicas_behind_nginx_with_every_template_value():
    compose = compose_file()
    app, nginx = compose["services"]["app"], compose["services"]["nginx"]
    assert app["deploy"]["replicas"] >= 2
    assert app["mem_limit"] and app["environment"]["MALLOC_ARENA_MAX"] == "2"
    assert nginx["depends_on"]["app"]["condition"] == "service_healthy"
    assert "./nginx.conf.template:/etc/nginx/templates/nginx.conf.template:ro" in nginx["volumes"]
    placeholders = set(run_cluster.PLACEHOLDER.findall(run_cluster.TEMPLATE.read_text()))
    assert placeholders == {"EXPLORER_LISTEN", "EXPLORER_UPSTREAMS", "EXPLORER_RUNTIME_DIR"}
    assert placeholders <= nginx["environment"].keys()
    assert "server app:8501;" in nginx["environment"]["EXPLORER_UPSTREAMS"]


def check_compose_rooms(compose: dict) -> None:
    """The app's ATTENTION_ROOMS_URL names the compose service running Redis, on Redis's port, and the
    app starts only once that service's health check passes."""
    services = compose["services"]
    app = services["app"]
    assert "ATTENTION_ROOMS_URL" in app["environment"], "the app would keep its rooms in each replica's memory"
    url = urlsplit(app["environment"]["ATTENTION_ROOMS_URL"])
    assert (url.scheme, url.path) == ("redis", "/0")
    assert url.hostname in services, f"no service is called {url.hostname}"
    redis = services[url.hostname]
    assert REDIS_IMAGE.fullmatch(redis["image"]), redis["image"]
    assert url.port == 6379 and "--port" not in redis["command"], "Redis listens on its default port, 6379"
    assert redis.get("healthcheck", {}).get("test") == ["CMD", "redis-cli", "ping"]
    assert app.get("depends_on", {}).get(url.hostname, {}).get("condition") == "service_healthy"


def test_compose_app_waits_for_a_healthy_redis_that_holds_the_rooms():
    check_compose_rooms(compose_file())


def _set_app(key, value):
    def change(compose):
        compose["services"]["app"][key] = value

    return change


@pytest.mark.parametrize(
    "change",
    [
        _set_app("environment", {"MALLOC_ARENA_MAX": "2"}),
        _set_app("environment", {"ATTENTION_ROOMS_URL": "redis://localhost:6379/0"}),
        _set_app("environment", {"ATTENTION_ROOMS_URL": "redis://redis:6380/0"}),
        _set_app("depends_on", {"redis": {"condition": "service_started"}}),
        _set_app("depends_on", {}),
        lambda compose: compose["services"].pop("redis"),
        lambda compose: compose["services"]["redis"].pop("healthcheck"),
    ],
    ids=["no-url", "other-host", "other-port", "started-not-healthy", "no-wait", "no-redis", "no-healthcheck"],
)
def test_the_compose_rooms_check_rejects_an_app_that_misses_redis(change):
    compose = copy.deepcopy(compose_file())
    change(compose)
    with pytest.raises(AssertionError):
        check_compose_rooms(compose)


def test_compose_redis_keeps_an_append_only_file_on_a_named_volume_and_publishes_no_port():
    compose = compose_file()
    redis = compose["services"]["redis"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    volume = next(v.removesuffix(":/data") for v in redis["volumes"] if v.endswith(":/data"))
    assert volume in compose["volumes"], "a named volume, declared at the top level"
    assert "ports" not in redis, "Redis has no password, so no port reaches the host"
    assert redis["mem_limit"]


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
        if line.strip() and not line.startswith(("#", "-")):  # "--extra-index-url" is pip's, not a package
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
    class it was 45% of the server's interpreter-lock time (BENCHMARKS.md, "What the server's settings buy"). The
    option must be one this Streamlit knows, or the line would be ignored with only a warning."""
    import tomllib

    shipped = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert shipped["runner"]["postScriptGC"] is False
    read = "from streamlit import config; config.get_config_options(force_reparse=True); "
    read += "print(config.get_option('runner.postScriptGC'))"
    done = subprocess.run([sys.executable, "-c", read], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == "False"  # what a server started here (streamlit run) reads
