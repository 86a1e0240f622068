"""The official Python SDK (mcp==2.3.0) against the runtime in every way a client reaches it:
2026-07-28 stateless, legacy Streamable HTTP session, auto negotiation, and HTTP+SSE.
Read-only: everything here shares one runtime serving manifests/weather.yaml."""

from __future__ import annotations

import base64
import json

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import BlobResourceContents, PromptReference, ResourceTemplateReference

from harness import ERAS, NEGOTIATED, Runtime, connect

pytestmark = pytest.mark.anyio

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return request.param


async def test_negotiates_the_expected_version(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        assert c.protocol_version == NEGOTIATED[era]
        if era != "modern":  # a pinned 2026 client synthesizes discover instead of asking
            assert c.server_info is not None
            assert (c.server_info.name, c.server_info.version) == ("weather", "1.2.3")
            assert c.server_info.title == "Weather (pytest)"
            assert c.instructions == "Use greet to greet people and get_forecast for forecasts."
            caps = c.server_capabilities
            assert caps.tools is not None and caps.tools.list_changed is True
            assert caps.prompts is not None and caps.prompts.list_changed is True
            assert caps.resources is not None and caps.resources.list_changed is True
            assert caps.resources.subscribe is True
            assert caps.completions is not None


async def test_lists_tools_in_declared_order(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        tools = (await c.list_tools()).tools
    assert [t.name for t in tools] == ["greet", "get_forecast", "delete_city", "build_report", "audit"]
    greet = tools[0]
    assert greet.title == "Greet"
    assert greet.input_schema["required"] == ["name"]
    assert greet.input_schema["properties"]["name"]["type"] == "string"
    assert greet.annotations is not None and greet.annotations.read_only_hint is True
    forecast = tools[1]
    assert forecast.output_schema is not None
    assert forecast.output_schema["required"] == ["city", "summary", "unit"]
    # A tool declared without inputSchema still advertises an object schema.
    assert tools[4].input_schema["type"] == "object"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [({"name": "Ada"}, "Hello, Ada!"), ({"name": "Grace", "punctuation": "."}, "Hello, Grace.")],
)
async def test_calls_a_tool_with_good_arguments(
    shared_runtime: Runtime, era: str, arguments: dict, expected: str
) -> None:
    async with connect(shared_runtime, era) as c:
        result = await c.call_tool("greet", arguments)
    assert result.is_error is False
    assert [(block.type, block.text) for block in result.content] == [("text", expected)]


@pytest.mark.parametrize(
    "name",
    ["Zoë Ångström", "<b>&\"'", "{{ 7*7 }}", "{% raw %}"],
    ids=["non-ascii", "markup", "template-expression", "template-tag"],
)
async def test_arguments_are_data_not_markup_or_code(shared_runtime: Runtime, era: str, name: str) -> None:
    """Argument values land in the reply verbatim: not HTML-escaped, never rendered as templates."""
    async with connect(shared_runtime, era) as c:
        result = await c.call_tool("greet", {"name": name})
    assert not result.is_error
    assert result.content[0].text == f"Hello, {name}!"


async def test_structured_content_matches_output_schema(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        result = await c.call_tool("get_forecast", {"city": "Oslo", "days": 2})
    assert not result.is_error
    expected = {"city": "Oslo", "summary": "Sunny in Oslo for 2 day(s)", "unit": "celsius"}
    assert result.structured_content == expected
    # 2025-06-18+: the structured result is also sent as a text block, for older clients.
    assert [json.loads(block.text) for block in result.content if block.type == "text"] == [expected]


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("greet", {}, "name"),  # missing required
        ("greet", {"name": 3}, "name"),  # wrong type
        ("greet", {"name": ""}, "name"),  # minLength
        ("greet", {"name": "Ada", "punctuation": "?"}, "punctuation"),  # not in enum
        ("greet", {"name": "Ada", "shout": True}, "shout"),  # additionalProperties: false
        ("get_forecast", {"city": "Oslo", "days": 9}, "days"),  # maximum
    ],
)
async def test_bad_arguments_are_a_tool_error_naming_the_field(
    shared_runtime: Runtime, era: str, tool: str, arguments: dict, field: str
) -> None:
    async with connect(shared_runtime, era) as c:
        result = await c.call_tool(tool, arguments)
    assert result.is_error is True
    text = " ".join(block.text for block in result.content if block.type == "text")
    assert field in text, text
    assert "Hello" not in text and "Sunny" not in text  # no template rendered
    assert result.structured_content is None


async def test_declared_tool_error(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        result = await c.call_tool("delete_city", {"city": "Lyon"})
    assert result.is_error is True
    assert [b.text for b in result.content] == ["Cannot delete Lyon: the city list is read-only."]


async def test_unknown_tool_is_a_protocol_error(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        with pytest.raises(MCPError) as raised:
            await c.call_tool("no_such_tool", {})
    assert raised.value.error.code == -32602
    assert "no_such_tool" in raised.value.error.message


async def test_lists_resources_and_templates(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        resources = (await c.list_resources()).resources
        templates = (await c.list_resource_templates()).resource_templates
    assert [(r.uri, r.mime_type) for r in resources] == [
        ("docs://weather/readme", "text/markdown"),
        ("docs://weather/logo", "image/png"),
        ("docs://weather/alerts", "text/plain"),
        ("docs://weather/stations", "text/csv"),
    ]
    assert resources[0].title == "Weather README"
    assert [(t.uri_template, t.name, t.mime_type) for t in templates] == [
        ("weather://city/{city}", "city", "text/plain")
    ]


async def test_reads_text_blob_and_file_resources(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        readme = (await c.read_resource("docs://weather/readme")).contents
        logo = (await c.read_resource("docs://weather/logo")).contents
        stations = (await c.read_resource("docs://weather/stations")).contents
    assert [(x.uri, x.mime_type, x.text) for x in readme] == [
        ("docs://weather/readme", "text/markdown", "# Weather\n\nAsk for a forecast by city.\n")
    ]
    assert len(logo) == 1 and isinstance(logo[0], BlobResourceContents)
    assert logo[0].mime_type == "image/png"
    assert base64.b64decode(logo[0].blob).startswith(PNG_MAGIC)
    assert stations[0].text == "id,name\n42,Paris-Montsouris\n43,Praha-Karlov\n"


async def test_reads_a_template_uri(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        contents = (await c.read_resource("weather://city/Reykjavik")).contents
    assert [(x.uri, x.mime_type, x.text) for x in contents] == [
        ("weather://city/Reykjavik", "text/plain", "Weather in Reykjavik: 21 C, clear.")
    ]


async def test_reads_a_non_ascii_template_uri(shared_runtime: Runtime, era: str) -> None:
    # 2026-07-28 carries the URI in the Mcp-Name header too, base64-encoded when not ASCII.
    async with connect(shared_runtime, era) as c:
        zurich = (await c.read_resource("weather://city/Zürich")).contents
        sao_paulo = (await c.read_resource("weather://city/São%20Paulo")).contents
    assert (zurich[0].uri, zurich[0].text) == ("weather://city/Zürich", "Weather in Zürich: 21 C, clear.")
    assert sao_paulo[0].text == "Weather in São Paulo: 21 C, clear."


@pytest.mark.parametrize("uri", ["docs://weather/nope", "weather://town/Oslo", "weather://city/a/b"])
async def test_unknown_resource_is_not_found(shared_runtime: Runtime, era: str, uri: str) -> None:
    async with connect(shared_runtime, era) as c:
        with pytest.raises(MCPError) as raised:
            await c.read_resource(uri)
    error = raised.value.error
    # 2026-07-28 forbids -32002 (use -32602); the handshake eras define -32002 for it.
    assert error.code == (-32602 if NEGOTIATED[era] == "2026-07-28" else -32002)
    assert error.data == {"uri": uri}


async def test_lists_prompts(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        prompts = (await c.list_prompts()).prompts
    assert [p.name for p in prompts] == ["plan_trip", "summarize_alerts"]
    assert [(a.name, bool(a.required)) for a in prompts[0].arguments] == [("city", True), ("days", False)]


async def test_gets_a_prompt_with_arguments(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        with_days = await c.get_prompt("plan_trip", {"city": "Kyoto", "days": "5"})
        default_days = await c.get_prompt("plan_trip", {"city": "Lima"})
        embedded = await c.get_prompt("summarize_alerts", {})
    assert [(m.role, m.content.text) for m in with_days.messages] == [("user", "Plan a 5-day trip to Kyoto.")]
    assert default_days.messages[0].content.text == "Plan a 3-day trip to Lima."
    assert [m.content.type for m in embedded.messages] == ["resource", "text"]
    assert embedded.messages[0].content.resource.uri == "docs://weather/alerts"


async def test_prompt_missing_required_argument_is_an_error(shared_runtime: Runtime, era: str) -> None:
    async with connect(shared_runtime, era) as c:
        with pytest.raises(MCPError) as raised:
            await c.get_prompt("plan_trip", {"days": "2"})
    assert raised.value.error.code == -32602
    assert "city" in raised.value.error.message


@pytest.mark.parametrize(("typed", "values"), [("p", ["Paris", "Prague"]), ("PRA", ["Prague"]), ("x", [])])
async def test_completes_a_prompt_argument(shared_runtime: Runtime, era: str, typed: str, values: list) -> None:
    async with connect(shared_runtime, era) as c:
        result = await c.complete(
            PromptReference(type="ref/prompt", name="plan_trip"), {"name": "city", "value": typed}
        )
    assert result.completion.values == values
    assert result.completion.has_more in (None, False)


async def test_completes_a_template_variable(shared_runtime: Runtime, era: str) -> None:
    ref = ResourceTemplateReference(type="ref/resource", uri="weather://city/{city}")
    async with connect(shared_runtime, era) as c:
        result = await c.complete(ref, {"name": "city", "value": "lo"})
    assert result.completion.values == ["London"]
