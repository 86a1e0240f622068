"""Interactive declared tools and prompts driven by the official Python SDK's elicitation,
sampling and roots callbacks, in each era: 2026-07-28 (`input_required` rounds the SDK answers
and retries with `requestState`), legacy Streamable HTTP and HTTP+SSE (server-to-client requests
on the request's or the session's stream). Accept, decline and cancel; two rounds; several
requests in one round; a client without the capability. Then two runtime processes sharing
`--session-key-file`: a 2026-07-28 round started on one completes on the other (raw HTTP, as a
load balancer spreads a client's requests; the SDK keeps one URL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from harness import JSON_AND_SSE, MANIFESTS, MODERN, Runtime, StartRuntime, connect, key_file, rpc_result

pytestmark = pytest.mark.anyio

INTERACTIVE = MANIFESTS / "interactive.yaml"
ERAS = ("modern", "legacy", "sse")
ROOTS = [types.Root(uri="file:///work/alpha", name="alpha"), types.Root(uri="file:///work/beta")]


@pytest.fixture(scope="module")
def interactive(tmp_path_factory: pytest.TempPathFactory):
    from harness import start_runtime

    rt = start_runtime(tmp_path_factory.mktemp("interactive"), INTERACTIVE)
    yield rt
    if problem := rt.stop():
        pytest.fail(f"unclean runtime shutdown: {rt}: {problem}", pytrace=False)


class User:
    """Plays the user and the client's model: answers each form from a script, records what
    the server asked."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.forms: list[Any] = []
        self.samples: list[Any] = []
        self.roots_asked = 0

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.forms.append(params)
        assert self.answers, f"asked more than scripted: {params}"
        return self.answers.pop(0)

    async def sample(self, context: Any, params: Any) -> types.CreateMessageResult:
        self.samples.append(params)
        text = params.messages[0].content.text
        reply = "Hello," if text == "Write a greeting." else f"short version of <{text}>"
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=reply),
            model="pytest-model",
            stopReason="endTurn",
        )

    async def roots(self, context: Any) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=ROOTS)

    def callbacks(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.roots,
        }


def accept(**content: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


@pytest.mark.parametrize("era", ERAS)
async def test_two_rounds_elicit_then_confirm(interactive: Runtime, era: str) -> None:
    user = User(accept(project="beta"), accept(confirm=True))
    async with connect(interactive, era, **user.callbacks()) as c:
        result = await c.call_tool("delete_issue", {"id": 12})
    assert not result.is_error, result
    assert text(result) == "deleted issue 12 in beta"
    # Round one asked for the project (an enum), round two for the confirmation naming it.
    assert [f.message for f in user.forms][1] == "Delete issue #12 of beta for good?"
    project = user.forms[0].requested_schema["properties"]["project"]
    assert project["enum"] == ["alpha", "beta"]
    assert user.forms[1].requested_schema["properties"]["confirm"]["type"] == "boolean"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (types.ElicitResult(action="decline"), "The user did not confirm; nothing was done."),
        (types.ElicitResult(action="cancel"), "The user cancelled; nothing was done."),
        (accept(confirm=False), "The user did not confirm; nothing was done."),
    ],
    ids=["decline", "cancel", "unchecked"],
)
async def test_declined_or_cancelled_confirmation_does_nothing(
    interactive: Runtime, era: str, answer: types.ElicitResult, says: str
) -> None:
    user = User(answer)
    async with connect(interactive, era, **user.callbacks()) as c:
        result = await c.call_tool("delete_issue", {"id": 7, "project": "alpha"})
    assert result.is_error
    assert text(result) == says
    assert len(user.forms) == 1


@pytest.mark.parametrize("era", ERAS)
async def test_declined_elicitation_names_the_field(interactive: Runtime, era: str) -> None:
    user = User(types.ElicitResult(action="decline"))
    async with connect(interactive, era, **user.callbacks()) as c:
        result = await c.call_tool("delete_issue", {"id": 7})
    assert result.is_error
    assert text(result) == "The user declined to provide project; nothing was done."


@pytest.mark.parametrize("era", ERAS)
async def test_one_round_asks_a_form_the_model_and_the_roots(interactive: Runtime, era: str) -> None:
    user = User(accept(name="Ada"))
    async with connect(interactive, era, **user.callbacks()) as c:
        result = await c.call_tool("briefing", {})
    assert text(result) == "Hello, Ada [file:///work/alpha file:///work/beta]"
    assert (len(user.forms), len(user.samples), user.roots_asked) == (1, 1, 1)


@pytest.mark.parametrize("era", ERAS)
async def test_sampling_sees_the_arguments_and_the_reply_sees_the_model(interactive: Runtime, era: str) -> None:
    user = User()
    async with connect(interactive, era, **user.callbacks()) as c:
        result = await c.call_tool("summarise", {"text": "a long report"})
    assert text(result) == "Summary (pytest-model): short version of <Summarise: a long report>"
    [asked] = user.samples
    assert asked.system_prompt == "Be brief."
    assert asked.max_tokens == 100


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_ask_for_missing_arguments(interactive: Runtime, era: str) -> None:
    user = User(accept(days=3))
    async with connect(interactive, era, **user.callbacks()) as c:
        result = await c.get_prompt("plan_trip", {})
    assert result.messages[0].content.text == "Plan 3 days."


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_the_capability_gets_32021(interactive: Runtime, era: str) -> None:
    user = User(types.ElicitResult(action="decline"))
    # Elicitation and roots, but no sampling: the tool needs all three.
    async with connect(interactive, era, elicitation_callback=user.elicit, list_roots_callback=user.roots) as c:
        with pytest.raises(MCPError) as refused:
            await c.call_tool("briefing", {})
        assert refused.value.code == -32021
        assert "sampling" in json.dumps(refused.value.data), refused.value.data
        # Nothing was asked before the refusal, and the client still works.
        assert (user.forms, user.roots_asked) == ([], 0)
        result = await c.call_tool("delete_issue", {"id": 1, "project": "alpha"})
    assert text(result) == "The user did not confirm; nothing was done."
    assert len(user.forms) == 1


@pytest.mark.parametrize("era", ["legacy", "sse"])
async def test_a_callback_error_is_the_clients_refusal(interactive: Runtime, era: str) -> None:
    """Legacy eras send the callback's error to the server, which says so and does nothing. (In
    2026-07-28 the SDK raises the callback's error locally and never retries: nothing to see at
    the server, so that mode is covered by the capability and decline tests.)"""

    async def refuse(context: Any, params: Any) -> types.ErrorData:
        return types.ErrorData(code=-1, message="user closed the dialog")

    async with connect(interactive, era, elicitation_callback=refuse) as c:
        result = await c.call_tool("delete_issue", {"id": 3, "project": "beta"})
    assert result.is_error
    assert "The client refused elicitation/create: user closed the dialog" in text(result)


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_questions_and_answers_are_counted(start: StartRuntime, era: str) -> None:
    rt = start(INTERACTIVE)
    user = User(accept(project="beta"), types.ElicitResult(action="decline"), accept(name="Ada"))
    async with connect(rt, era, **user.callbacks()) as c:
        await c.call_tool("delete_issue", {"id": 1})
        await c.call_tool("briefing", {})

    def count(kind: str, outcome: str) -> float:
        return rt.metric("mcp_input_requests_total", kind=kind, outcome=outcome)

    # delete_issue: the project form and the confirmation (declined); briefing: one of each.
    assert count("elicitation", "asked") == 3
    assert (count("elicitation", "accept"), count("elicitation", "decline")) == (2, 1)
    assert (count("sampling", "asked"), count("sampling", "answered")) == (1, 1)
    assert (count("roots", "asked"), count("roots", "answered")) == (1, 1)


# --- two processes sharing the session key ---------------------------------------------------


def modern_call(rt: Runtime, name: str, arguments: dict, **round_fields: Any) -> dict:
    """A raw 2026-07-28 `tools/call` declaring elicitation, with `round_fields` (requestState,
    inputResponses) added to its params."""
    params = {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "kube-mcp-pytest", "version": "0"},
        },
        **round_fields,
    }
    headers = dict(JSON_AND_SSE, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name})
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = httpx2.post(rt.url, headers=headers, json=body, timeout=10)
    assert response.status_code == 200, response.text
    return rpc_result(response)


async def test_a_round_started_on_one_process_completes_on_another(start: StartRuntime, tmp_path: Path) -> None:
    shared = key_file(tmp_path / "shared.key")
    a = start(INTERACTIVE, extra_args=("--session-key-file", str(shared)), name="a")
    b = start(INTERACTIVE, extra_args=("--session-key-file", str(shared)), name="b")
    c = start(INTERACTIVE, extra_args=("--session-key-file", str(key_file(tmp_path / "other.key"))), name="c")
    args = {"id": 5}
    round1 = modern_call(a, "delete_issue", args)["result"]
    assert round1["resultType"] == "input_required", round1
    assert list(round1["inputRequests"]) == ["project"]
    round2 = modern_call(
        b,
        "delete_issue",
        args,
        requestState=round1["requestState"],
        inputResponses={"project": {"action": "accept", "content": {"project": "alpha"}}},
    )["result"]
    assert round2["resultType"] == "input_required", round2
    assert round2["inputRequests"]["confirm"]["params"]["message"] == "Delete issue #5 of alpha for good?"
    confirmed = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    # A process with another key cannot open the state; one with the shared key can.
    foreign = modern_call(c, "delete_issue", args, requestState=round2["requestState"], inputResponses=confirmed)
    assert foreign["error"]["code"] == -32602, foreign
    assert "altered" in foreign["error"]["message"]
    done = modern_call(a, "delete_issue", args, requestState=round2["requestState"], inputResponses=confirmed)
    assert done["result"]["resultType"] == "complete", done
    assert done["result"]["content"][0]["text"] == "deleted issue 5 in alpha"
