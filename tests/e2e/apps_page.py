"""An MCP Apps view in a real browser: Debian's Chromium, driven by Playwright for Python.

Run by tests/e2e/apps.sh (environment: APPS_HOST_URL (the host page), APPS_ALLOWED and
APPS_DENIED (the view's declared and undeclared https origins), CHROMIUM, E2E (artefacts)).
The host page (tests/e2e/apps/host.js) reads the view through the official TypeScript SDK and
renders it with ext-apps' AppBridge; this checks what the view shows: the tool result the host
sent, an app-only tool it called through the bridge, a fetch to the declared origin answered,
and one to the undeclared origin stopped by the browser's CSP (a securitypolicyviolation
event, and no request reached that origin, though the host page itself reached it).
Writes $E2E/apps.png; exits 1 on the first failure.
I/O: HTTP to the host page, a headless browser process.
"""

import json
import os
import urllib.parse
import urllib.request

from playwright.sync_api import expect, sync_playwright

from headless import WAIT_MS, launch, run, screenshot, step

HOST = os.environ["APPS_HOST_URL"]
ALLOWED = os.environ["APPS_ALLOWED"]
DENIED = os.environ["APPS_DENIED"]
ARTEFACTS = os.environ["E2E"]


def hits():
    with urllib.request.urlopen(f"{HOST}/hits", timeout=10) as response:
        return json.load(response)


def main():
    query = urllib.parse.urlencode({"denied": DENIED})
    with sync_playwright() as p:
        browser = launch(p)
        try:
            # The two origins use a self-signed certificate made by apps.sh.
            context = browser.new_context(ignore_https_errors=True)
            page = context.new_page()
            console = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            page.goto(f"{HOST}/?{query}")

            step("the host called the tool and handed its result to the view")
            page.wait_for_selector("body[data-status=sent], body[data-status=failed]", timeout=WAIT_MS)
            assert page.get_attribute("body", "data-status") == "sent", page.get_attribute("body", "data-error")
            expect(page.locator("#text")).to_have_text("pod web-1 is Running")
            view = page.frame_locator("iframe")
            expect(view.locator("#pod")).to_have_text("web-1: Running", timeout=WAIT_MS)

            step("the view called an app-only tool through the host bridge")
            expect(view.locator("#refresh")).to_have_text("refreshed", timeout=WAIT_MS)

            step("the view reached its declared origin")
            expect(view.locator("#declared")).to_have_text("ok 200 allowed", timeout=WAIT_MS)

            step("the browser's CSP stopped the view's fetch to an undeclared origin")
            expect(view.locator("#undeclared")).to_have_text("failed TypeError", timeout=WAIT_MS)
            expect(page.locator("#control")).to_have_text("reachable")
            violations = json.loads(view.locator("#violations").text_content())
            assert {"directive": "connect-src", "blocked": f"{DENIED}/data"} in violations, violations
            assert not any(v["blocked"].startswith(ALLOWED) for v in violations), violations
            seen = hits()
            assert seen["denied"] == {"/control": 1}, seen
            assert seen["allowed"] == {"/data": 1}, seen
            assert any("Content Security Policy" in line and DENIED in line for line in console), console

            screenshot(page, ARTEFACTS, "apps.png")
        finally:
            browser.close()


if __name__ == "__main__":
    run(main)
