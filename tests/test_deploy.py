"""deploy/kubernetes/ is valid and consistent, checked offline.

The manifests cannot run here, so they are checked against Kubernetes' own
OpenAPI-derived JSON schemas for one stated release (kubernetes-validate
bundles them; nothing is fetched) and against each other: names, labels and
ports that must agree for the example to work once applied.
"""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes"
KUBERNETES_VERSION = "1.30.0"
# Not a Kubernetes API object: kustomize reads it, the API server never sees it.
KUSTOMIZATION = "kustomization.yaml"
EXAMPLES = {"api-keys-secret.example.yaml"}


def _manifests() -> dict[str, dict]:
    found = {}
    for path in sorted(DEPLOY.glob("*.yaml")):
        if path.name == KUSTOMIZATION:
            continue
        (document,) = yaml.safe_load_all(path.read_text(encoding="utf-8"))
        found[path.name] = document
    return found


MANIFESTS = _manifests()


def _one(kind: str, name: str) -> dict:
    (found,) = (
        m for m in MANIFESTS.values() if m["kind"] == kind and m["metadata"]["name"] == name
    )
    return found


def _container(deployment: str) -> dict:
    (container,) = _one("Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    return container


def _args(container: dict) -> list[str]:
    return [*container.get("command", []), *container.get("args", [])]


def _flag_value(container: dict, flag: str) -> int:
    (value,) = (arg.split("=", 1)[1] for arg in _args(container) if arg.startswith(flag + "="))
    return int(value)


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_manifest_matches_the_kubernetes_schema(name: str) -> None:
    # strict: unknown fields (a typo'd key) are errors, as `kubectl --validate=strict`.
    kubernetes_validate.validate(MANIFESTS[name], KUBERNETES_VERSION, strict=True)


def test_kustomization_lists_every_manifest_but_the_examples() -> None:
    kustomization = yaml.safe_load((DEPLOY / KUSTOMIZATION).read_text(encoding="utf-8"))
    assert kustomization["kind"] == "Kustomization"
    assert sorted(kustomization["resources"]) == sorted(set(MANIFESTS) - EXAMPLES)
    images = {image["name"] for image in kustomization["images"]}
    for deployment in ("ct-triton", "ct-frontend"):
        assert _container(deployment)["image"].split(":")[0] in images


def test_services_select_their_deployments_and_target_named_ports() -> None:
    services = [m for m in MANIFESTS.values() if m["kind"] == "Service"]
    assert {s["metadata"]["name"] for s in services} == {"ct-triton", "ct-frontend"}
    for service in services:
        deployment = _one("Deployment", service["metadata"]["name"])
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        selector = service["spec"]["selector"]
        assert selector.items() <= pod_labels.items()
        assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        ports = {p["name"] for p in _container(service["metadata"]["name"])["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports


def test_frontend_points_at_the_triton_service_grpc_port() -> None:
    env = {e["name"]: e.get("value") for e in _container("ct-frontend")["env"]}
    host, port = env["CT_TRITON_URL"].rsplit(":", 1)
    service = _one("Service", host)
    (grpc,) = (p for p in service["spec"]["ports"] if p["name"] == "grpc")
    assert int(port) == grpc["port"]
    triton_ports = {p["name"]: p["containerPort"] for p in _container("ct-triton")["ports"]}
    assert triton_ports[grpc["targetPort"]] == 8001  # Triton's default gRPC port


def test_frontend_keys_file_is_mounted_from_the_secret() -> None:
    container = _container("ct-frontend")
    env = {e["name"]: e.get("value") for e in container["env"]}
    keys_file = Path(env["CT_API_KEYS_FILE"])
    volumes = _one("Deployment", "ct-frontend")["spec"]["template"]["spec"]["volumes"]
    (mount,) = (m for m in container["volumeMounts"] if m["mountPath"] == str(keys_file.parent))
    (volume,) = (v for v in volumes if v["name"] == mount["name"])
    example = MANIFESTS["api-keys-secret.example.yaml"]
    assert volume["secret"]["secretName"] == example["metadata"]["name"]
    (item,) = volume["secret"]["items"]
    assert item["path"] == keys_file.name and item["key"] in example["stringData"]


def test_probes_use_declared_container_ports() -> None:
    for deployment in ("ct-triton", "ct-frontend"):
        container = _container(deployment)
        ports = {p["name"] for p in container["ports"]} | {
            p["containerPort"] for p in container["ports"]
        }
        for probe in ("readinessProbe", "livenessProbe"):
            check = container[probe].get("httpGet") or container[probe]["tcpSocket"]
            assert check["port"] in ports, (deployment, probe)
    triton = _container("ct-triton")
    assert triton["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert triton["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    frontend = _container("ct-frontend")
    assert frontend["readinessProbe"]["httpGet"]["path"] == "/health"
    assert "httpGet" not in frontend["livenessProbe"]  # must not depend on Triton


def test_volumes_mounted_exist() -> None:
    claims = {
        m["metadata"]["name"] for m in MANIFESTS.values() if m["kind"] == "PersistentVolumeClaim"
    }
    for deployment in ("ct-triton", "ct-frontend"):
        spec = _one("Deployment", deployment)["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in spec["volumes"]}
        for mount in _container(deployment)["volumeMounts"]:
            volume = volumes[mount["name"]]
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims


def test_hpas_target_existing_deployments() -> None:
    hpas = [m for m in MANIFESTS.values() if m["kind"] == "HorizontalPodAutoscaler"]
    assert {h["spec"]["scaleTargetRef"]["name"] for h in hpas} == {"ct-triton", "ct-frontend"}
    for hpa in hpas:
        target = hpa["spec"]["scaleTargetRef"]
        assert target["kind"] == "Deployment" and target["apiVersion"] == "apps/v1"
        _one("Deployment", target["name"])
    (queue,) = _one("HorizontalPodAutoscaler", "ct-triton")["spec"]["metrics"]
    assert queue["pods"]["metric"]["name"] == "ct_decoder_requests"
    assert queue["pods"]["metric"]["selector"]["matchLabels"] == {"state": "waiting"}
    # A CPU target is a percentage of the request, so the request must be set.
    assert _container("ct-frontend")["resources"]["requests"]["cpu"]


def test_the_decoder_still_exports_the_queue_metric() -> None:
    model = DEPLOY.parents[1] / "model_repository" / "constrained_decoder" / "1" / "model.py"
    source = model.read_text(encoding="utf-8")
    assert '"ct_decoder_requests"' in source and '{"state": "waiting"}' in source


def _prestop_sleep(container: dict) -> int:
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    return int(command[1])


def test_shutdown_timeouts_fit_the_grace_period() -> None:
    triton, frontend = _container("ct-triton"), _container("ct-frontend")
    exit_timeout = _flag_value(triton, "--exit-timeout-secs")
    drain = _flag_value(frontend, "--timeout-graceful-shutdown")
    # A frontend still streaming needs its Triton for as long as it drains.
    assert drain <= exit_timeout
    for deployment, container, timeout in (
        ("ct-triton", triton, exit_timeout),
        ("ct-frontend", frontend, drain),
    ):
        grace = _one("Deployment", deployment)["spec"]["template"]["spec"][
            "terminationGracePeriodSeconds"
        ]
        assert grace > _prestop_sleep(container) + timeout, deployment


def test_the_image_runs_what_the_manifests_say() -> None:
    dockerfile = (DEPLOY.parents[1] / "Dockerfile.triton").read_text(encoding="utf-8")
    repository = "/opt/constrained-triton/model_repository"
    assert f"--model-repository={repository}" in _args(_container("ct-triton"))
    assert f"WORKDIR {repository.rsplit('/', 1)[0]}" in dockerfile
    for copied in re.findall(r"^COPY (\S+)/ ", dockerfile, flags=re.MULTILINE):
        assert (DEPLOY.parents[1] / copied).is_dir(), copied
    assert "ENV CT_MODEL_DIR=/models/served" in dockerfile
    uvicorn = _args(_container("ct-frontend"))
    assert uvicorn[:5] == ["python3", "-m", "uvicorn", "frontend.app:create_app", "--factory"]
