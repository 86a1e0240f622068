"""URL-mode elicitation (SEP-1036) with the official Python SDK's elicitation callback, in
each era: the user is sent to the declared page (rendered over the arguments) and the call
runs once they accept; declined, nothing runs. The SDK declares `elicitation.url` whenever it
has an elicitation callback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import types

from harness import StartRuntime, connect

pytestmark = pytest.mark.anyio

MANIFEST = """\
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: consent}
spec:
  tools:
    - name: read_calendar
      inputSchema: {type: object, properties: {day: {type: string}}, required: [day]}
      elicit:
        - name: consent
          url: "https://consent.example.com/start?day={{ args.day | urlencode }}"
          message: "Approve access to your calendar for {{ args.day }}"
      content: [{type: text, text: "calendar of {{ args.day }}"}]
"""


@pytest.mark.parametrize("era", ["modern", "legacy", "sse"])
@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_the_user_is_sent_to_the_page(start: StartRuntime, tmp_path: Path, era: str, action: str) -> None:
    manifest = tmp_path / "m" / "consent.yaml"
    manifest.parent.mkdir()
    manifest.write_text(MANIFEST)
    rt = start(manifest)
    asked: list[Any] = []

    async def user(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action=action)

    async with connect(rt, era, elicitation_callback=user) as c:
        result = await c.call_tool("read_calendar", {"day": "next monday"})
    assert len(asked) == 1
    assert asked[0].mode == "url"
    assert asked[0].url == "https://consent.example.com/start?day=next%20monday"
    assert asked[0].message == "Approve access to your calendar for next monday"
    if action == "accept":
        assert not result.is_error, result
        assert result.content[0].text == "calendar of next monday"
    else:
        assert result.is_error
        assert "declined" in result.content[0].text
