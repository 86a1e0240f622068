// The catalog page's script: keeps the server-rendered list current from the registry API
// (every few seconds while the page is visible), filters it as the user types, and copies
// connection snippets. The page works without it. Every value is set with textContent or
// setAttribute, never as HTML, so nothing a manifest declares can run here.
"use strict";

(() => {
  const REFRESH_MS = 3000;
  const PAGE = 100;
  const MAX_PAGES = 10; // at most 1000 servers are kept current
  const OFFICIAL = "io.modelcontextprotocol.registry/official";
  const KUBE_MCP = "io.kube-mcp/server";
  const INSPECTOR = "@modelcontextprotocol/inspector@2.12.0";
  const list = document.getElementById("servers");
  const count = document.getElementById("count");
  const search = document.getElementById("search");
  if (!list || !count || !search) return;
  let servers = null; // the last list the API gave, or null before the first answer

  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== undefined && value !== null) node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  };

  // The same decision as page.rs's `badge`.
  const badge = (response) => {
    const meta = response._meta?.[KUBE_MCP] || {};
    if (meta.suspended === true) return ["suspended", "Suspended"];
    if (response._meta?.[OFFICIAL]?.status === "active") return ["ready", "Ready"];
    if (meta.ready?.status !== "True") return ["not-ready", "Not ready"];
    return ["unverified", "Not verified"];
  };

  const conditionText = (c) => {
    if (!c) return "not reported yet";
    return `${c.status} (${c.reason})` + (c.message ? `: ${c.message}` : "");
  };

  const shellWord = (word) =>
    /^[A-Za-z0-9\-_./:@%+=,]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;

  const snippets = (key, url) => [
    ["vscode", "VS Code (.vscode/mcp.json)",
      JSON.stringify({ servers: { [key]: { type: "http", url } } }, null, 2)],
    ["claude", "Claude Code", `claude mcp add --transport http ${shellWord(key)} ${shellWord(url)}`],
    ["cursor", "Cursor (~/.cursor/mcp.json)", JSON.stringify({ mcpServers: { [key]: { url } } }, null, 2)],
    ["inspector", "MCP Inspector", `npx ${INSPECTOR} --cli ${shellWord(url)} --transport http --method tools/list`],
  ];

  const HINTS = [["readOnlyHint", "read-only"], ["destructiveHint", "destructive"],
    ["idempotentHint", "idempotent"], ["openWorldHint", "open world"]];

  const card = (i, response) => {
    const server = response.server || {};
    const meta = response._meta?.[KUBE_MCP] || {};
    const name = server.name || "";
    const title = server.title || name;
    const key = name.split("/").pop();
    const [badgeClass, badgeText] = badge(response);
    const url = server.remotes?.[0]?.url;
    const head = el("div", { class: "head" });
    const icon = server.icons?.[0]?.src;
    if (icon) head.append(el("img", { class: "icon", src: icon, alt: "", width: "40", height: "40" }));
    head.append(el("h2", { id: `s${i}-title` }, title), el("span", { class: `badge ${badgeClass}` }, badgeText));
    const facts = el("dl", { class: "facts" });
    const fact = (label, value, cls) => facts.append(el("dt", {}, label), el("dd", { class: cls }, value));
    fact("URL", url || "not reported yet", "url");
    fact("Ready", conditionText(meta.ready), "ready");
    fact("Verified", conditionText(meta.verified), "verified");
    fact("Sign-in", meta.auth?.issuer || "none: anyone who reaches the URL may call it", "auth");
    fact("MCPServer", `${meta.namespace}/${meta.name}`, "object");
    if (server.websiteUrl) {
      facts.append(el("dt", {}, "Website"),
        el("dd", {}, el("a", { href: server.websiteUrl, rel: "noopener noreferrer" }, server.websiteUrl)));
    }
    const tools = meta.tools || [];
    const total = tools.length + (meta.toolsOmitted || 0);
    const toolList = el("ul");
    for (const tool of tools) {
      const item = el("li", {}, el("span", { class: "tool-title" }, tool.title || tool.name), " ",
        el("code", {}, tool.name));
      for (const [hint, words] of HINTS) {
        if (tool.annotations?.[hint] === true) item.append(" ", el("span", { class: "hint" }, words));
      }
      if (tool.requiredScopes) item.append(" ", el("span", { class: "scopes" }, `needs ${tool.requiredScopes.join(" ")}`));
      if (tool.description) item.append(el("p", {}, tool.description));
      toolList.append(item);
    }
    if (meta.toolsOmitted) toolList.append(el("li", { class: "omitted" }, `and ${meta.toolsOmitted} more`));
    const toolsBlock = el("details", { class: "tools" }, el("summary", {}, `${total} tool${total === 1 ? "" : "s"}`), toolList);
    let connect;
    if (url) {
      connect = el("details", { class: "connect" }, el("summary", {}, "Connect"));
      for (const [id, label, text] of snippets(key, url)) {
        connect.append(el("div", { class: "snippet" },
          el("h3", { id: `s${i}-${id}-label` }, label),
          el("pre", { id: `s${i}-${id}`, "aria-labelledby": `s${i}-${id}-label` }, el("code", {}, text)),
          el("button", { type: "button", class: "copy", "data-copy": `s${i}-${id}`,
            "aria-label": `Copy the ${label} snippet of ${title}` }, "Copy")));
      }
    } else {
      connect = el("p", { class: "connect" }, "No URL yet: the operator has not reported where it serves.");
    }
    const searchText = `${name}\n${title}\n${server.description || ""}`.toLowerCase();
    return el("li", { class: "server", "data-name": name, "data-search": searchText },
      el("article", { "aria-labelledby": `s${i}-title` }, head,
        el("p", { class: "meta" }, el("code", {}, name), ` · version ${server.version || ""}`),
        el("p", { class: "description" }, server.description || ""),
        facts, toolsBlock, connect));
  };

  // Shows the cards that match the search box and says how many.
  const filter = () => {
    const wanted = search.value.trim().toLowerCase();
    let shown = 0;
    for (const item of list.children) {
      const match = !wanted || (item.dataset.search || "").includes(wanted);
      item.hidden = !match;
      if (match) shown += 1;
    }
    count.textContent = shown === 1 ? "1 server" : `${shown} servers`;
  };

  const render = () => {
    // Keep open <details> open across refreshes.
    const open = new Set([...list.querySelectorAll("details[open]")]
      .map((d) => `${d.closest(".server")?.dataset.name}|${d.className}`));
    list.replaceChildren(...servers.map((s, i) => card(i, s)));
    for (const d of list.querySelectorAll("details")) {
      if (open.has(`${d.closest(".server")?.dataset.name}|${d.className}`)) d.open = true;
    }
    document.querySelector(".more")?.remove(); // every page is loaded here
    filter();
  };

  const load = async () => {
    const all = [];
    let cursor = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const query = new URLSearchParams({ limit: String(PAGE) });
      if (cursor) query.set("cursor", cursor);
      const response = await fetch(`/v0.1/servers?${query}`, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`registry answered ${response.status}`);
      const body = await response.json();
      all.push(...(body.servers || []));
      cursor = body.metadata?.nextCursor;
      if (!cursor) break;
    }
    return all.filter((s) => s._meta?.[OFFICIAL]?.status !== "deleted");
  };

  const refresh = async () => {
    try {
      const fresh = await load();
      if (JSON.stringify(fresh) !== JSON.stringify(servers)) {
        servers = fresh;
        render();
      }
      document.body.dataset.refreshed = String(Date.now());
    } catch (error) {
      // Keep what is shown; the next refresh may succeed.
      document.body.dataset.refreshError = String(error);
    }
    setTimeout(refresh, document.hidden ? REFRESH_MS * 5 : REFRESH_MS);
  };

  search.addEventListener("input", () => {
    const url = new URL(window.location.href);
    if (search.value) url.searchParams.set("search", search.value);
    else url.searchParams.delete("search");
    url.searchParams.delete("cursor");
    window.history.replaceState(null, "", url);
    filter();
  });
  search.form?.addEventListener("submit", (event) => {
    event.preventDefault();
    filter();
  });

  list.addEventListener("click", async (event) => {
    const button = event.target.closest("button.copy");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    try {
      await navigator.clipboard.writeText(source.textContent);
      button.textContent = "Copied";
    } catch {
      button.textContent = "Copy failed: select the text instead";
    }
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  });

  for (const button of list.querySelectorAll("button.copy")) button.hidden = false;
  document.body.dataset.script = "ready";
  refresh();
})();
