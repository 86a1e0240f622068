"""Discovery's search mode through the official Python SDK: a server of 300 tools lists only its
pinned tool and the meta tools, and a client that behaves like a model (search by keywords, read
the schema of the best match, call it with arguments built from that schema) reaches a tool that
`tools/list` never showed, in the 2026-07-28 and legacy-session eras. Does process I/O (starts
the runtime)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Runtime, connect, start_runtime

pytestmark = pytest.mark.anyio

VERBS = ("get", "list", "create", "delete", "patch", "watch")
KINDS = (
    "pod", "deployment", "service", "config_map", "secret", "namespace", "node", "job",
    "cron_job", "ingress", "stateful_set", "daemon_set", "replica_set", "lease", "event",
    "role", "role_binding", "service_account", "persistent_volume", "storage_class",
    "network_policy", "endpoint_slice", "priority_class", "resource_quota", "limit_range",
    "pod_disruption_budget", "horizontal_pod_autoscaler", "runtime_class", "csi_driver",
    "volume_attachment", "certificate_signing_request", "validating_admission_policy",
    "mutating_webhook_configuration", "validating_webhook_configuration", "custom_resource_definition",
    "api_service", "flow_schema", "priority_level_configuration", "ingress_class", "csi_node",
    "controller_revision", "pod_template", "replication_controller", "component_status",
    "token_review", "subject_access_review", "binding", "device_class", "resource_claim",
    "ip_address",
)  # fmt: skip
TARGET = "restart_deployment"
"""Not in `tools/list`; the flow must find it by what it does."""


def manifest() -> str:
    tools = [
        {
            "name": f"{verb}_{kind}",
            "description": f"{verb.capitalize()} a {kind.replace('_', ' ')} object.",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            "content": [{"type": "text", "text": f"{verb} {kind}"}],
        }
        for kind in KINDS
        for verb in VERBS
    ]
    tools.append(
        {
            "name": TARGET,
            "title": "Restart a deployment",
            "description": "Rolls every pod of a deployment, one at a time.\nLike kubectl rollout restart.",
            "inputSchema": {
                "type": "object",
                "properties": {"namespace": {"type": "string"}, "deployment": {"type": "string"}},
                "required": ["namespace", "deployment"],
            },
            "content": [{"type": "text", "text": "restarted {{ args.namespace }}/{{ args.deployment }}"}],
        }
    )
    spec = {"discovery": {"mode": "search", "pinned": ["get_pod"]}, "tools": tools}
    doc = {"apiVersion": "kube-mcp.io/v1alpha1", "kind": "MCPServer", "metadata": {"name": "big"}, "spec": spec}
    return json.dumps(doc)  # JSON is YAML


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    source = tmp_path_factory.mktemp("discovery-src") / "big.yaml"
    source.write_text(manifest())
    rt = start_runtime(tmp_path_factory.mktemp("discovery"), source)
    yield rt
    if problem := rt.stop():
        pytest.fail(f"unclean runtime shutdown: {rt}: {problem}", pytrace=False)


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_model_style_flow_reaches_a_tool_not_listed(big: Runtime, era: str) -> None:
    async with connect(big, era) as c:
        listed = await c.list_tools()
        names = [t.name for t in listed.tools]
        assert names == ["get_pod", "search_tools", "describe_tools"]
        assert listed.next_cursor is None

        found = await c.call_tool("search_tools", {"query": "restart my deployment"})
        assert not found.is_error, text_of(found)
        best = found.structured_content["tools"][0]
        assert best == {
            "name": TARGET,
            "title": "Restart a deployment",
            "description": "Rolls every pod of a deployment, one at a time.",
        }
        # The other deployment tools match too, below it; "my" matches nothing.
        assert found.structured_content["total"] == 1 + len(VERBS)
        assert f"- {TARGET} (Restart a deployment)" in text_of(found)

        described = await c.call_tool("describe_tools", {"names": [best["name"], "no_such_tool"]})
        assert not described.is_error, text_of(described)
        [tool] = described.structured_content["tools"]
        assert described.structured_content["unknown"] == ["no_such_tool"]
        schema = tool["inputSchema"]
        # Arguments the way a model fills them: every required property of the schema.
        arguments = {prop: f"my-{prop}" for prop in schema["required"]}

        called = await c.call_tool(tool["name"], arguments)
        assert not called.is_error, text_of(called)
        assert text_of(called) == "restarted my-namespace/my-deployment"


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_search_is_bounded_and_deterministic(big: Runtime, era: str) -> None:
    async with connect(big, era) as c:
        first = await c.call_tool("search_tools", {"query": "listPods", "limit": 3})
        again = await c.call_tool("search_tools", {"query": "listPods", "limit": 3})
        assert first.structured_content == again.structured_content
        assert [t["name"] for t in first.structured_content["tools"]][0] == "list_pod"
        many = await c.call_tool("search_tools", {"query": "pod"})
        assert many.structured_content["total"] > 10
        assert len(many.structured_content["tools"]) == 10  # the default limit
        too_many = await c.call_tool("search_tools", {"query": "pod", "limit": 51})
        assert too_many.is_error and "from 1 to 50" in text_of(too_many)
