"""The catalog page in a real browser: Debian's Chromium, driven by Playwright for Python.

Run by tests/e2e/registry.sh against a registry fed by a real control plane (environment:
KUBE_MCP_REGISTRY_URL, KUBE_MCP_CATALOG_NS (an empty namespace), CHROMIUM, E2E (artefacts);
kubectl on PATH with an admin kubeconfig). The test writes MCPServers and their status with
kubectl, as the operator would, and checks what a person sees: the list without JavaScript,
the list rendered from the API, live search, a copy button's clipboard, a badge that changes
when a server becomes unready, a declared `<script>` shown as text, and the strict policy.
Writes a screenshot to $E2E/catalog.png. Prints one line per step; exits 1 on the first failure.
I/O: kubectl, HTTP to the registry, a headless browser process.
"""

import datetime
import json
import os
import re
import subprocess
import time
import struct
import urllib.request
import zlib

from playwright.sync_api import expect, sync_playwright

from headless import WAIT_MS, launch, run, screenshot, step

REGISTRY = os.environ["KUBE_MCP_REGISTRY_URL"]
NS = os.environ["KUBE_MCP_CATALOG_NS"]
ARTEFACTS = os.environ["E2E"]
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def png(width=48, height=48, rgb=(11, 87, 208)):
    """A solid-colour PNG, made here: the icon the test serves for its declared https: URL."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


ICON = "https://icons.example.com/weather.png"


def serve_icon(context):
    # The machine has no internet: every https: image (declared icons) is answered from here.
    context.route(re.compile(r"^https://"),
                  lambda route: route.fulfill(status=200, content_type="image/png", body=png()))


def kubectl(*args, stdin=None):
    subprocess.run(["kubectl", "-n", NS, *args], input=stdin, text=True, check=True,
                   stdout=subprocess.DEVNULL)


def server(name, **spec):
    body = {"registry": {"publish": True},
            "tools": [{"name": "get_forecast", "title": "Get forecast",
                       "description": "Forecast for a city.", "annotations": {"readOnlyHint": True},
                       "requiredScopes": ["forecast:read"],
                       "content": [{"type": "text", "text": "Sunny."}]}]}
    body.update(spec)
    manifest = {"apiVersion": "kube-mcp.io/v1alpha1", "kind": "MCPServer",
                "metadata": {"name": name}, "spec": body}
    kubectl("apply", "-f", "-", stdin=json.dumps(manifest))


def status(name, ready):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    state, reason = ("True", "Available") if ready else ("False", "RollingOut")
    patch = {"status": {"url": f"https://mcp.example.com/{name}/mcp", "conditions": [
        {"type": "Ready", "status": state, "reason": reason, "message": f"{reason} (e2e)",
         "lastTransitionTime": now},
        {"type": "Verified", "status": "True", "reason": "Serving", "message": "serving (e2e)",
         "lastTransitionTime": now}]}}
    kubectl("patch", "mcpserver", name, "--subresource=status", "--type=merge", "-p", json.dumps(patch))


def api(path):
    with urllib.request.urlopen(f"{REGISTRY}{path}", timeout=10) as response:
        return json.load(response)


def eventually(what, check, seconds=30):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out: {what}")
        time.sleep(0.3)


def card(page, name):
    return page.locator(f'li.server[data-name$="/{NS}.{name}"]')


def main():
    step("servers applied and their status written")
    server("weather", title="Weather", description="Forecasts for any city",
           icons=[{"src": ICON, "mimeType": "image/png"}],
           auth={"issuer": "https://idp.example.com/realms/acme"})
    server("xss", title=HOSTILE, description=HOSTILE)
    server("tracker", title="Tracker", description="Issue tracker")
    for name, ready in (("weather", True), ("xss", True), ("tracker", False)):
        status(name, ready)
    eventually("the registry lists the three servers",
               lambda: len(api(f"/v0.1/servers?search={NS}.&limit=100")["servers"]) == 3)
    listed = [s for s in api("/v0.1/servers?limit=100")["servers"]]
    weather_name = next(s["server"]["name"] for s in listed if s["server"]["name"].endswith(f"/{NS}.weather"))
    weather_url = "https://mcp.example.com/weather/mcp"

    with sync_playwright() as p:
        browser = launch(p)
        try:
            step("without JavaScript the server-rendered list is complete")
            plain = browser.new_context(java_script_enabled=False)
            serve_icon(plain)
            page = plain.new_page()
            response = page.goto(f"{REGISTRY}/")
            assert response.status == 200
            csp = response.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "unsafe" not in csp, csp
            total = len(listed)
            expect(page.locator("li.server")).to_have_count(total)
            expect(page.locator("#count")).to_have_text(f"{total} servers")
            expect(card(page, "weather").locator(".badge")).to_have_text("Ready")
            expect(card(page, "tracker").locator(".badge")).to_have_text("Not ready")
            expect(card(page, "weather").locator("button.copy").first).to_be_hidden()
            page.fill("#search", f"{NS}.weather")
            page.click("form.search button[type=submit]")
            expect(page.locator("li.server")).to_have_count(1)
            assert f"search={NS}.weather" in page.url
            plain.close()

            step("with JavaScript the list is rendered from the API and kept current")
            context = browser.new_context()
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=REGISTRY)
            serve_icon(context)
            page = context.new_page()
            problems = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"{REGISTRY}/")
            page.wait_for_selector("body[data-refreshed]", timeout=WAIT_MS)
            expect(page.locator("li.server")).to_have_count(total)
            server("newcomer", title="Newcomer", description="Applied after the page loaded")
            expect(card(page, "newcomer")).to_have_count(1, timeout=WAIT_MS)
            expect(card(page, "newcomer").locator(".badge")).to_have_text("Not ready")
            expect(page.locator("#count")).to_have_text(f"{total + 1} servers")

            step("search filters as the user types")
            page.fill("#search", f"{NS}.weath")
            expect(page.locator("li.server:visible")).to_have_count(1)
            expect(page.locator("#count")).to_have_text("1 server")
            page.fill("#search", "")
            expect(page.locator("li.server:visible")).to_have_count(total + 1)

            step("a copy button puts the right snippet on the clipboard")
            weather = card(page, "weather")
            weather.locator("details.connect summary").click()
            button = weather.locator("button.copy").first
            expect(button).to_be_visible()
            button.click()
            expect(button).to_have_text("Copied")
            copied = page.evaluate("navigator.clipboard.readText()")
            key = weather_name.split("/")[-1]
            want = json.dumps({"servers": {key: {"type": "http", "url": weather_url}}}, indent=2)
            assert copied == want, f"clipboard: {copied!r}, wanted {want!r}"
            claude = weather.locator("button.copy").nth(1)
            claude.click()
            expect(claude).to_have_text("Copied")
            copied = page.evaluate("navigator.clipboard.readText()")
            assert copied == f"claude mcp add --transport http {key} {weather_url}", copied

            step("a declared <script> is shown as text and never runs")
            hostile = card(page, "xss")
            expect(hostile.locator(".description")).to_have_text(HOSTILE)
            expect(hostile.locator("h2")).to_have_text(HOSTILE)
            assert page.evaluate("window.__pwned") is None
            assert page.locator("script").count() == 1
            assert hostile.locator("img").count() == 0

            step("the page shows what status says: a server becoming unready changes its badge")
            expect(weather.locator(".badge")).to_have_text("Ready")
            status("weather", False)
            expect(weather.locator(".badge")).to_have_text("Not ready", timeout=WAIT_MS)
            expect(weather.locator("dd.ready")).to_have_text("False (RollingOut): RollingOut (e2e)")
            # The details the user opened stay open across the refresh.
            expect(weather.locator("details.connect")).to_have_attribute("open", "")
            status("weather", True)
            expect(weather.locator(".badge")).to_have_text("Ready", timeout=WAIT_MS)

            step("keyboard: the search box and a card's tools are reachable and open with Enter")
            page.locator('header a[href="/v0.1/servers"]').focus()
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "search"
            summary = card(page, "tracker").locator("details.tools summary")
            summary.focus()
            page.keyboard.press("Enter")
            expect(card(page, "tracker").locator("details.tools")).to_have_attribute("open", "")
            expect(page.get_by_label("Search servers")).to_have_count(1)

            icon = card(page, "weather").locator("img.icon")
            expect(icon).to_have_attribute("src", ICON)
            assert page.evaluate("(img) => img.complete && img.naturalWidth", icon.element_handle()) == 48
            screenshot(page, ARTEFACTS, "catalog.png")
            assert not problems, f"console errors: {problems}"
            context.close()
        finally:
            browser.close()


if __name__ == "__main__":
    run(main)
