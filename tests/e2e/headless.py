"""tests/e2e/headless.py: what the browser checks share (apps_page.py, catalog_page.py): Debian's
Chromium launched headless through Playwright, one line per step, a full-page screenshot among
the artefacts, and a one-line failure before the trace. Reads CHROMIUM (default
/usr/bin/chromium); no I/O of its own beyond the screenshot."""
import os
import sys

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
# How long a page may take to show what a check waits for.
WAIT_MS = 20_000


def step(name):
    print(f"  - {name}", flush=True)


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def screenshot(page, directory, name):
    path = os.path.join(directory, name)
    page.screenshot(path=path, full_page=True)
    step(f"screenshot written to {path}")


def run(main):
    try:
        main()
    except Exception as error:  # one line that says what failed, then the trace
        print(f"FAILED: {error}", file=sys.stderr)
        raise
