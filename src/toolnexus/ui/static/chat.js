// The toolnexus chat page: AG-UI events over POST /agui, the thread from GET /api/threads/{id}.
// Plain JavaScript, no dependencies. The thread id lives in the URL (#thread=...), so a reload
// shows the same conversation; a bearer token, when the server asks for one, in sessionStorage.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const log = $("log");
  const promptBox = $("prompt");
  const sendButton = $("send");
  const statusBox = $("status");
  const TOKEN_KEY = "toolnexus.token";

  let thread = threadFromUrl() || newThread();
  let running = false;
  const texts = new Map();  // message id -> element
  const tools = new Map();  // tool call id -> {card, args, result, state, raw}

  function threadFromUrl() {
    const match = /(?:^|[#&])thread=([^&]+)/.exec(location.hash);
    return match ? decodeURIComponent(match[1]) : null;
  }

  function newThread() {
    const id = (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random()).replace(/-/g, "");
    history.replaceState(null, "", "#thread=" + encodeURIComponent(id));
    return id;
  }

  function newId() {
    return crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random();
  }

  function setStatus(state, text) {
    statusBox.dataset.state = state;
    statusBox.textContent = text;
  }

  function setRunning(on) {
    running = on;
    sendButton.disabled = on;
    document.body.dataset.running = on ? "true" : "false";
    if (on) setStatus("running", "working…");
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function add(node) {
    const empty = $("empty");
    if (empty) empty.remove();
    log.appendChild(node);
    log.scrollTop = log.scrollHeight;
    return node;
  }

  // --- token -------------------------------------------------------------------------------

  function askToken() {
    const dialog = $("token-dialog");
    const input = $("token");
    dialog.hidden = false;
    input.value = "";
    input.focus();
    return new Promise((resolve) => {
      $("token-form").onsubmit = (event) => {
        event.preventDefault();
        const token = input.value.trim();
        if (!token) return;
        sessionStorage.setItem(TOKEN_KEY, token);
        dialog.hidden = true;
        resolve(token);
      };
    });
  }

  async function call(path, options) {
    for (;;) {
      const headers = Object.assign({}, (options && options.headers) || {});
      const token = sessionStorage.getItem(TOKEN_KEY);
      if (token) headers["Authorization"] = "Bearer " + token;
      const response = await fetch(path, Object.assign({}, options, { headers }));
      if (response.status !== 401) return response;
      sessionStorage.removeItem(TOKEN_KEY);
      await askToken();
    }
  }

  // --- rendering -----------------------------------------------------------------------------

  function userMessage(text) {
    return add(el("div", "msg user", text));
  }

  function assistantText(id, text, streaming) {
    const node = el("div", "msg assistant" + (streaming ? " streaming" : ""), text || "");
    node.dataset.messageId = id;
    node.dataset.deltas = "0";
    texts.set(id, node);
    return add(node);
  }

  function errorMessage(text) {
    add(el("div", "msg error", text));
  }

  function toolCard(id, name) {
    const known = tools.get(id);
    if (known && !known.result) {  // announced again (a resumed turn runs its other calls)
      known.raw = "";
      known.args.textContent = "";
      setToolState(known, "calling", "calling…");
      return known;
    }
    const card = el("section", "tool");
    card.dataset.callId = id;
    card.dataset.state = "calling";
    const head = el("header");
    head.appendChild(el("span", "badge", "tool"));
    head.appendChild(el("span", "name", name));
    const state = head.appendChild(el("span", "state", "calling…"));
    card.appendChild(head);
    card.appendChild(el("div", "label", "arguments"));
    const args = card.appendChild(el("pre", "args", ""));
    const entry = { card, args, state, result: null, raw: "" };
    tools.set(id, entry);
    add(card);
    return entry;
  }

  function pretty(text) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (_) {
      return text;
    }
  }

  function setToolState(entry, state, label) {
    entry.card.dataset.state = state;
    entry.state.textContent = label;
  }

  function toolResult(id, content, isError) {
    const entry = tools.get(id) || toolCard(id, "tool");
    if (!entry.result) {
      entry.card.appendChild(el("div", "label", "result"));
      entry.result = entry.card.appendChild(el("pre", "result", ""));
    }
    entry.result.textContent = content;
    setToolState(entry, isError ? "error" : "done", isError ? "error" : "done");
  }

  function pendingCard(request) {
    const card = el("section", "pending");
    card.dataset.requestId = request.id;
    card.dataset.kind = request.kind;
    card.appendChild(el("div", "kind", request.kind === "approval" ? "approval needed" : request.kind));
    card.appendChild(el("div", "prompt", request.prompt));
    if (request.url && /^https?:\/\//i.test(request.url)) {  // never a javascript: link
      const link = el("a", "", request.url);
      link.href = request.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      card.appendChild(link);
    }
    const actions = card.appendChild(el("div", "actions"));
    const fields = inputFields(request, actions);
    const approve = actions.appendChild(el("button", "approve", request.kind === "input" || request.kind === "question" ? "Send" : "Approve"));
    approve.type = "button";
    const deny = actions.appendChild(el("button", "deny", "Deny"));
    deny.type = "button";
    approve.onclick = () => answer(card, request, true, fields ? fields() : {});
    deny.onclick = () => answer(card, request, false, { reason: "declined" });
    const callId = request.data && request.data.toolCallId;
    if (callId && tools.has(callId)) setToolState(tools.get(callId), "waiting", "waiting for you");
    setStatus("pending", "waiting for you");
    add(card);
    const first = card.querySelector("input");
    (first || approve).focus();
  }

  // A text field for an input or question request; one field per property when it carries a
  // schema (an MCP elicitation). Returns a function giving the answer's data.
  function inputFields(request, actions) {
    if (request.kind !== "input" && request.kind !== "question") return null;
    const schema = request.data && request.data.schema;
    const props = schema && schema.properties;
    if (props && typeof props === "object" && Object.keys(props).length) {
      const inputs = {};
      for (const [name, prop] of Object.entries(props)) {
        const input = actions.appendChild(el("input"));
        input.placeholder = (prop && (prop.title || prop.description)) || name;
        input.name = name;
        inputs[name] = [input, prop || {}];
      }
      return () => {
        const data = {};
        for (const [name, [input, prop]] of Object.entries(inputs)) {
          const value = input.value;
          if (value === "") continue;
          if (prop.type === "number" || prop.type === "integer") data[name] = Number(value);
          else if (prop.type === "boolean") data[name] = /^(true|yes|y|1)$/i.test(value);
          else data[name] = value;
        }
        return data;
      };
    }
    const input = actions.appendChild(el("input"));
    input.placeholder = "Your answer";
    input.onkeydown = (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        actions.querySelector("button.approve").click();
      }
    };
    return () => ({ answers: [input.value] });
  }

  function settle(card, text) {
    card.querySelector(".actions").replaceWith(el("div", "answered", text));
  }

  // --- running -------------------------------------------------------------------------------

  async function run(input) {
    setRunning(true);
    let finished = false;
    try {
      const response = await call("/agui", {
        method: "POST",
        headers: { "Content-Type": "application/json", "Accept": "text/event-stream" },
        body: JSON.stringify(input),
      });
      if (!response.ok) {
        errorMessage(`The server answered ${response.status}: ${await response.text()}`);
        setStatus("error", "error");
        return;
      }
      await readEvents(response.body, (event) => {
        if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") finished = true;
        onEvent(event);
      });
      if (!finished) {
        errorMessage("The connection closed before the run finished.");
        setStatus("error", "disconnected");
      }
    } catch (error) {
      errorMessage("Could not reach the server: " + error.message);
      setStatus("error", "offline");
    } finally {
      for (const node of texts.values()) node.classList.remove("streaming");
      setRunning(false);
      if (statusBox.dataset.state === "running") setStatus("idle", "ready");
    }
  }

  // Server-sent events: frames separated by a blank line, each "data:" line a JSON event.
  async function readEvents(body, onEvent) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      buffer = buffer.replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (data) onEvent(JSON.parse(data));
      }
      if (done) return;
    }
  }

  function onEvent(event) {
    switch (event.type) {
      case "TEXT_MESSAGE_START":
        assistantText(event.messageId, "", true);
        break;
      case "TEXT_MESSAGE_CONTENT": {
        const node = texts.get(event.messageId) || assistantText(event.messageId, "", true);
        if (!window.toolnexusFirstToken) window.toolnexusFirstToken = performance.timeOrigin + performance.now();
        node.textContent += event.delta;
        node.dataset.deltas = String(Number(node.dataset.deltas) + 1);
        log.scrollTop = log.scrollHeight;
        break;
      }
      case "TEXT_MESSAGE_END": {
        const node = texts.get(event.messageId);
        if (node) node.classList.remove("streaming");
        break;
      }
      case "TOOL_CALL_START":
        toolCard(event.toolCallId, event.toolCallName);
        break;
      case "TOOL_CALL_ARGS": {
        const entry = tools.get(event.toolCallId);
        if (entry) {
          entry.raw += event.delta;
          entry.args.textContent = entry.raw;
        }
        break;
      }
      case "TOOL_CALL_END": {
        const entry = tools.get(event.toolCallId);
        if (entry) {
          entry.args.textContent = pretty(entry.raw);
          setToolState(entry, "running", "running…");
        }
        break;
      }
      case "TOOL_CALL_RESULT":
        toolResult(event.toolCallId, event.content, false);
        break;
      case "CUSTOM":
        if (event.name === "toolnexus.pending") pendingCard(event.value);
        break;
      case "RUN_ERROR":
        errorMessage(event.message);
        setStatus("error", "error");
        break;
      case "RUN_FINISHED":
        if (!(event.result && event.result.status === "pending")) setStatus("idle", "ready");
        break;
    }
  }

  function send(text) {
    userMessage(text);
    run({
      threadId: thread,
      runId: newId(),
      state: {},
      messages: [{ id: newId(), role: "user", content: text }],
      tools: [],
      context: [],
      forwardedProps: {},
    });
  }

  function answer(card, request, ok, payload) {
    if (running) return;
    settle(card, ok ? "Answered" : "Denied");
    run({
      threadId: thread,
      runId: newId(),
      state: {},
      messages: [],
      tools: [],
      context: [],
      forwardedProps: {},
      resume: [{ interruptId: request.id, status: ok ? "resolved" : "cancelled", payload }],
    });
  }

  // --- the stored thread -----------------------------------------------------------------------

  async function restore() {
    $("thread").textContent = "#" + thread.slice(0, 8);
    let view;
    try {
      const response = await call("/api/threads/" + encodeURIComponent(thread), {});
      if (!response.ok) return;
      view = await response.json();
    } catch (_) {
      return;
    }
    const waitingOn = view.pending && view.pending.data && view.pending.data.toolCallId;
    for (const message of view.messages || []) {
      if (message.role === "user") userMessage(typeof message.content === "string" ? message.content : "");
      else if (message.role === "assistant") {
        if (message.content) assistantText(message.id, message.content, false);
        for (const callItem of message.toolCalls || []) {
          const entry = toolCard(callItem.id, callItem.function.name);
          entry.raw = callItem.function.arguments;
          entry.args.textContent = pretty(entry.raw);
          setToolState(entry, "running", "no result");
        }
      } else if (message.role === "tool" && message.toolCallId !== waitingOn) {
        toolResult(message.toolCallId, typeof message.content === "string" ? message.content : "", Boolean(message.error));
      }
    }
    if (view.pending) pendingCard(view.pending);
    document.body.dataset.restored = "true";
  }

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = promptBox.value.trim();
    if (!text || running) return;
    const unanswered = log.querySelector(".pending .actions button");
    if (unanswered) {  // the thread waits for that answer before it takes a new message
      setStatus("pending", "answer the card first");
      unanswered.focus();
      return;
    }
    promptBox.value = "";
    send(text);
  });
  promptBox.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("new-chat").addEventListener("click", () => {
    location.hash = "";
    thread = newThread();
    location.reload();
  });

  restore();
  promptBox.focus();
})();
