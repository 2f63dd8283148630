// The playground: one constraint, checked as it is typed, then generated.
// Plain JS, no build step. The API key lives in this page's memory only.
"use strict";

const EXAMPLES = {
  json_schema: JSON.stringify({
    type: "object",
    properties: {
      name: { type: "string", maxLength: 24 },
      age: { type: "integer", minimum: 0, maximum: 120 },
      languages: { type: "array", items: { enum: ["en", "fr", "de"] }, maxItems: 3 },
    },
    required: ["name", "age"],
    additionalProperties: false,
  }, null, 2),
  regex: "(19|20)\\d{2}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])",
  bnf: "<start> ::= <subject> \" \" <verb> \".\"\n<subject> ::= \"the cat\" | \"a dog\"\n<verb> ::= \"sleeps\" | \"runs\"",
  gbnf: "root ::= item (\", \" item)*\nitem ::= [a-z]+",
  lark: "start: pair (\";\" pair)*\npair: KEY \"=\" NUMBER\nKEY: /[a-z]{1,8}/\nNUMBER: /[0-9]{1,4}/",
  "iso-ebnf": "(* ISO/IEC 14977 *)\ndate = year, \"-\", month, \"-\", day ;\nyear = 4 * digit ;\nmonth = \"0\", nonzero | \"1\", (\"0\" | \"1\" | \"2\") ;\nday = (\"0\" | \"1\" | \"2\"), digit | \"3\", (\"0\" | \"1\") ;\ndigit = \"0\" | nonzero ;\nnonzero = \"1\" | \"2\" | \"3\" | \"4\" | \"5\" | \"6\" | \"7\" | \"8\" | \"9\" ;",
  abnf: "; RFC 3339, section 5.6\ndate-time = full-date \"T\" full-time\nfull-date = 4DIGIT \"-\" 2DIGIT \"-\" 2DIGIT\nfull-time = 2DIGIT \":\" 2DIGIT \":\" 2DIGIT [\".\" 1*DIGIT] time-offset\ntime-offset = \"Z\" / (\"+\" / \"-\") 2DIGIT \":\" 2DIGIT",
  typescript: "export interface Person {\n  name: string;\n  age: number;\n  role: \"admin\" | \"user\";\n}",
};

const PROMPTS = {
  json_schema: "The person, as JSON: ",
  regex: "A date: ",
  bnf: "A sentence: ",
  gbnf: "Some words: ",
  lark: "Settings: ",
  "iso-ebnf": "A date: ",
  abnf: "A timestamp: ",
  typescript: "A person: ",
};

// Which routes take which constraint, and how the body names it.
const ROUTES = {
  json_schema: ["/v1/completions (response_format)", "/v1/completions (grammar)", "/v1/chat/completions (response_format)"],
  regex: ["/v1/completions (grammar)", "/v1/completion/regex", "/v1/chat/completions (grammar)"],
  bnf: ["/v1/completion/cfg", "/v1/completions (grammar)", "/v1/chat/completions (grammar)"],
  gbnf: ["/v1/completions (grammar)", "/v1/completion/cfg", "/v1/chat/completions (grammar)"],
  lark: ["/v1/completions (grammar)", "/v1/completion/cfg", "/v1/chat/completions (grammar)"],
  "iso-ebnf": ["/v1/completion/cfg", "/v1/completions (grammar)", "/v1/chat/completions (grammar)"],
  abnf: ["/v1/completion/cfg", "/v1/completions (grammar)", "/v1/chat/completions (grammar)"],
  typescript: ["/v1/completion/typed"],
};

const $ = (id) => document.getElementById(id);
let apiKey = "";
let modelName = null;
let checkTimer = null;
let checkSerial = 0;

function headers() {
  const result = { "Content-Type": "application/json" };
  if (apiKey) result.Authorization = `Bearer ${apiKey}`;
  return result;
}

function validateBody(kind, text) {
  switch (kind) {
    case "regex": return { pattern: text };
    case "bnf": case "gbnf": case "lark": case "iso-ebnf": case "abnf": return { grammar: text, grammar_format: kind };
    case "json_schema": return { json_schema: text };
    case "typescript": return { schema: text, type_name: $("type-name").value };
  }
  throw new Error(`unknown kind ${kind}`);
}

function optionalNumber(id) {
  const value = $(id).value.trim();
  return value === "" ? undefined : Number(value);
}

function stopList() {
  return $("stop").value.split(",").map((s) => s.trim()).filter((s) => s);
}

// The request the page will send: [path, body, streams].
function buildRequest() {
  const kind = $("kind").value;
  const route = $("route").value;
  const text = $("constraint").value;
  const prompt = $("prompt").value;
  const maxTokens = optionalNumber("max-tokens") ?? 64;
  const sampling = {
    temperature: optionalNumber("temperature") ?? 1,
    top_p: optionalNumber("top-p") ?? 1,
  };
  const stop = stopList();
  const chat = route.startsWith("/v1/chat/completions");
  if (chat || route.startsWith("/v1/completions")) {
    const body = chat
      ? { model: modelName || "default", messages: [{ role: "user", content: prompt }], max_completion_tokens: maxTokens, stream_options: { include_usage: true } }
      : { model: modelName || "default", prompt, max_tokens: maxTokens };
    Object.assign(body, sampling, { stream: true });
    const seed = optionalNumber("seed");
    if (seed !== undefined) body.seed = seed;
    if (stop.length) body.stop = stop;
    if (route.includes("response_format")) {
      body.response_format = { type: "json_schema", json_schema: { name: "playground", schema: JSON.parse(text), strict: true } };
    } else {
      body.grammar = { type: kind, value: kind === "json_schema" ? JSON.parse(text) : text };
    }
    return [chat ? "/v1/chat/completions" : "/v1/completions", body, true];
  }
  if (route === "/v1/completion/typed") {
    const body = { prompt, schema: text, type_name: $("type-name").value, max_tokens: maxTokens, ...sampling };
    if (stop.length) body.stop = stop;
    return [route, body, false];
  }
  const body = { prompt, max_new_tokens: maxTokens, ...sampling };
  if (route === "/v1/completion/regex") body.pattern = text;
  else { body.grammar = text; body.grammar_format = kind; }
  return [route, body, false];
}

function showCheck(message, ok) {
  const check = $("check");
  check.textContent = message;
  check.className = `check ${ok ? "ok" : "bad"}`;
}

function describeReport(report) {
  if (!report) return "-";
  const enforced = Object.values(report.enforced || {}).reduce((a, b) => a + b, 0);
  const ignored = (report.ignored || []).map((k) => `${k.keyword} at ${k.pointer}`);
  const notEnforced = (report.not_enforced || []).map((k) => `${k.keyword} at ${k.pointer}`);
  let text = `enforced=${enforced}`;
  if (ignored.length) text += `; ignored: ${ignored.join(", ")}`;
  if (notEnforced.length) text += `; not enforced: ${notEnforced.join(", ")}`;
  return text;
}

async function checkConstraint() {
  const serial = ++checkSerial;
  const kind = $("kind").value;
  let body;
  try {
    body = validateBody(kind, $("constraint").value);
  } catch (error) {
    showCheck(String(error), false);
    return;
  }
  try {
    const response = await fetch("/v1/grammars/validate", { method: "POST", headers: headers(), body: JSON.stringify(body) });
    const data = await response.json();
    if (serial !== checkSerial) return;  // a newer edit is being checked
    if (!response.ok) {
      showCheck(data.error?.message || data.error || `HTTP ${response.status}`, false);
      return;
    }
    if (data.valid) {
      showCheck(`valid ${data.language}`, true);
      $("report").textContent = describeReport(data.report);
    } else {
      showCheck(data.errors.map((e) => (e.line ? `line ${e.line}, column ${e.column}: ` : "") + e.message).join("\n"), false);
    }
  } catch (error) {
    if (serial === checkSerial) showCheck(`could not check: ${error}`, false);
  }
}

function scheduleCheck() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(checkConstraint, 400);
  renderSnippets();
}

// A Python literal for a JSON value: True/False/None, and strings as JSON
// string literals, which Python reads the same way.
function pyLiteral(value, indent = "") {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value !== "object") return JSON.stringify(value);
  const inner = indent + "    ";
  const items = Array.isArray(value)
    ? value.map((item) => inner + pyLiteral(item, inner))
    : Object.keys(value).map((key) => `${inner}${JSON.stringify(key)}: ${pyLiteral(value[key], inner)}`);
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  return items.length ? `${open}\n${items.join(",\n")},\n${indent}${close}` : open + close;
}

function renderSnippets() {
  let path, body;
  try {
    [path, body] = buildRequest();
  } catch (error) {
    $("curl-snippet").textContent = $("python-snippet").textContent = `(fix the constraint first: ${error})`;
    return;
  }
  const origin = window.location.origin;
  const json = JSON.stringify(body, null, 2);
  $("curl-snippet").textContent =
    `curl -N ${origin}${path} \\\n  -H "Authorization: Bearer $CT_API_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '${json.replaceAll("'", "'\\''")}'`;
  if (path === "/v1/chat/completions") {
    const { model, messages, max_completion_tokens, stream, ...extra } = body;
    $("python-snippet").textContent =
      `import os\n\nfrom openai import OpenAI\n\nclient = OpenAI(base_url="${origin}/v1", api_key=os.environ["CT_API_KEY"])\n` +
      `stream = client.chat.completions.create(\n    model=${JSON.stringify(model)},\n    messages=${pyLiteral(messages, "    ")},\n` +
      `    max_completion_tokens=${max_completion_tokens},\n    stream=True,\n` +
      `    extra_body=${pyLiteral(extra, "    ")},\n)\n` +
      `for chunk in stream:\n    print(chunk.choices[0].delta.content or "", end="", flush=True)`;
  } else if (path === "/v1/completions") {
    const { model, prompt, max_tokens, stream, ...extra } = body;
    $("python-snippet").textContent =
      `import os\n\nfrom openai import OpenAI\n\nclient = OpenAI(base_url="${origin}/v1", api_key=os.environ["CT_API_KEY"])\n` +
      `stream = client.completions.create(\n    model=${JSON.stringify(model)},\n    prompt=${JSON.stringify(prompt)},\n    max_tokens=${max_tokens},\n    stream=True,\n` +
      `    extra_body=${pyLiteral(extra, "    ")},\n)\n` +
      `for chunk in stream:\n    print(chunk.choices[0].text, end="", flush=True)`;
  } else {
    $("python-snippet").textContent =
      `import os, httpx\n\nresponse = httpx.post(\n    "${origin}${path}",\n    headers={"Authorization": f"Bearer {os.environ['CT_API_KEY']}"},\n` +
      `    json=${pyLiteral(body, "    ")},\n    timeout=120,\n)\nprint(response.json())`;
  }
}

function setVerdict(text, style) {
  const verdict = $("verdict");
  verdict.textContent = text;
  verdict.className = style;
}

async function ensureModel() {
  if (modelName) return;
  const response = await fetch("/v1/models", { headers: headers() });
  if (response.ok) modelName = (await response.json()).data?.[0]?.id || null;
}

// Reads an SSE body, calling onEvent with each parsed data line.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") return;
        onEvent(JSON.parse(data));
      }
    }
  }
}

function finishVerdict(reason) {
  if (reason === "stop" || reason === "pattern_match") setVerdict("verified match (re-checked by the server's judge)", "verdict-match");
  else if (reason === "tool_calls") setVerdict("tool calls", "verdict-match");
  else if (reason === "length" || reason === "token_limit") setVerdict("token limit reached before the constraint completed", "verdict-other");
  else setVerdict(reason || "unknown", "verdict-error");
}

async function generate() {
  const button = $("generate");
  button.disabled = true;
  $("output").textContent = "";
  $("ttft").textContent = $("tps").textContent = "-";
  setVerdict("generating…", "");
  try {
    await ensureModel();
    const [path, body, streams] = buildRequest();
    renderSnippets();
    const start = performance.now();
    const response = await fetch(path, { method: "POST", headers: headers(), body: JSON.stringify(body) });
    const report = response.headers.get("X-Constraint-Report");
    if (report) $("report").textContent = report;
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      const message = data.error?.message || data.error || `HTTP ${response.status}`;
      setVerdict(`error ${response.status}: ${message}`, "verdict-error");
      return;
    }
    if (streams) {
      let first = null, last = null, chunks = 0, tokens = null, reason = null, failure = null;
      await readEvents(response, (event) => {
        if (event.error) failure = event.error.message || JSON.stringify(event.error);
        if (event.usage) tokens = event.usage.completion_tokens;
        const choice = event.choices?.[0];
        if (!choice) return;
        const now = performance.now();
        // Completions stream `text`; chat streams `delta.content` (and tool calls).
        const text = choice.text ?? choice.delta?.content ?? "";
        const calls = choice.delta?.tool_calls?.map((call) => `${call.function.name}(${call.function.arguments})`) ?? [];
        if (text || calls.length) {
          if (first === null) { first = now; $("ttft").textContent = `${(now - start).toFixed(0)} ms`; }
          last = now;
          chunks += 1;
          $("output").textContent += text + calls.join("\n");
        }
        if (choice.finish_reason) reason = choice.finish_reason;
      });
      const count = tokens ?? chunks;
      if (first !== null && last > first && count > 1) $("tps").textContent = ((count - 1) / ((last - first) / 1000)).toFixed(1);
      if (failure) setVerdict(`error during the stream: ${failure}`, "verdict-error");
      else finishVerdict(reason);
    } else {
      const data = await response.json();
      const elapsed = performance.now() - start;
      $("ttft").textContent = `${elapsed.toFixed(0)} ms (whole response; this route does not stream)`;
      const text = data.completion ?? data.choices?.[0]?.text ?? "";
      $("output").textContent = text;
      const count = data.tokens_generated ?? data.usage?.completion_tokens;
      if (count) $("tps").textContent = (count / (elapsed / 1000)).toFixed(1);
      finishVerdict(data.stop_reason ?? data.choices?.[0]?.finish_reason);
    }
  } catch (error) {
    setVerdict(`error: ${error}`, "verdict-error");
  } finally {
    button.disabled = false;
  }
}

function fillRoutes() {
  const routes = ROUTES[$("kind").value];
  $("route").replaceChildren(...routes.map((route) => new Option(route, route)));
  $("type-name-label").hidden = $("kind").value !== "typescript";
}

function selectKind(kind, constraint, prompt) {
  $("kind").value = kind;
  fillRoutes();
  $("constraint").value = constraint ?? EXAMPLES[kind];
  $("prompt").value = prompt ?? PROMPTS[kind];
  scheduleCheck();
}

function init() {
  // A link can carry a whole request (?kind=…&constraint=…&prompt=…&run=1),
  // so a playground state can be shared; never a key.
  const params = new URLSearchParams(window.location.search);
  const kind = EXAMPLES[params.get("kind")] !== undefined ? params.get("kind") : "json_schema";
  selectKind(kind, params.get("constraint") ?? undefined, params.get("prompt") ?? undefined);
  for (const [param, id] of [["route", "route"], ["max_tokens", "max-tokens"], ["temperature", "temperature"], ["seed", "seed"], ["type_name", "type-name"]]) {
    if (params.has(param)) $(id).value = params.get(param);
  }
  $("kind").addEventListener("change", () => selectKind($("kind").value));
  for (const id of ["constraint", "type-name"]) $(id).addEventListener("input", scheduleCheck);
  for (const id of ["route", "prompt", "max-tokens", "temperature", "top-p", "seed", "stop"]) $(id).addEventListener("input", renderSnippets);
  $("api-key").addEventListener("change", () => { apiKey = $("api-key").value.trim(); modelName = null; scheduleCheck(); });
  $("generate").addEventListener("click", generate);
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", () => navigator.clipboard?.writeText($(button.dataset.target).textContent));
  }
  if (params.get("run") === "1") {
    clearTimeout(checkTimer);
    checkConstraint().then(generate);
  }
}

init();
