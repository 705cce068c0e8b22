// pagegraph's web page: sign in with an API key, list and upload documents (a bar for the bytes, then each file's
// stages), ask with the run streamed (stages, evidence, the model's words, then the checked answer rendered from its
// Markdown with clickable citations, and its sources), reopen threads, and check a citation on its page. Runs and threads go through the LangGraph API of the same server; the rest through its /ui routes.
"use strict";

const KEY = "pagegraph-api-key";
const $ = (id) => document.getElementById(id);
const state = { key: sessionStorage.getItem(KEY) || "", me: null, thread: null, view: null, documents: [] };

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function showError(message) {
  const banner = $("banner");
  banner.textContent = message;
  banner.hidden = !message;
}

// Every request says it comes from this page: a header other sites' pages cannot send without the server's consent.
function headers(extra = {}) {
  const own = { "x-requested-with": "pagegraph", ...extra };
  return state.key ? { "x-api-key": state.key, ...own } : own;
}

const UNREACHABLE = "The server is not reachable — is `pagegraph serve` running?";

function unreachable() {
  const error = new Error(UNREACHABLE);
  error.unreachable = true;
  return error;
}

// The error of a refused request: the server's `detail` when it sent one.
function refused(status, statusText, body) {
  let detail = `${status} ${statusText}`;
  try {
    const parsed = JSON.parse(body);
    detail = typeof parsed.detail === "string" ? parsed.detail : JSON.stringify(parsed.detail ?? parsed);
  } catch (_) { /* not JSON */ }
  const error = new Error(detail);
  error.status = status;
  return error;
}

async function call(path, options = {}) {
  let reply;
  try {
    reply = await fetch(path, { ...options, headers: headers(options.headers) });
  } catch (_) {
    throw unreachable(); // fetch fails this way only when no reply came at all
  }
  if (!reply.ok) throw refused(reply.status, reply.statusText, await reply.text());
  return reply;
}

const json = async (path, options) => (await call(path, options)).json();
const post = (path, body) =>
  json(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

// ---- signing in ----

async function signIn() {
  try {
    state.me = await json("/ui/me");
  } catch (error) {
    if (error.status === 401) {
      $("app").hidden = true;
      $("sign-in").hidden = false;
      $("sign-out").hidden = true;
      if (state.key) showError(`Sign-in failed: ${error.message}`);
      return;
    }
    showError(error.unreachable ? error.message : `The server did not answer: ${error.message}`);
    return;
  }
  showError("");
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("sign-out").hidden = !state.key;
  $("who").textContent = `${state.me.user} · ${state.me.role}` + (state.me.ceiling ? ` · up to ${state.me.ceiling}` : "");
  fillSelect($("graph"), state.me.graphs);
  fillSelect($("output-type"), state.me.output_types);
  fillSelect($("upload-confidentiality"), state.me.confidentiality, "internal");
  $("upload-files").accept = state.me.upload_types.join(",");
  $("upload-form").hidden = !state.me.may_upload;
  await Promise.all([loadDocuments(), loadThreads()]);
}

function fillSelect(select, values, chosen) {
  select.replaceChildren(...values.map((value) => element("option", { value }, value)));
  if (chosen) select.value = chosen;
}

// ---- documents and uploads ----

async function loadDocuments() {
  const listed = await json("/ui/documents");
  state.documents = listed.documents;
  $("documents").replaceChildren(
    ...(listed.documents.length ? listed.documents : [null]).map((d) =>
      d === null
        ? element("li", { class: "meta" }, "No documents yet.")
        : element(
            "li",
            { "data-name": d.name, title: d.summary },
            element("div", { class: "name" }, d.name),
            element("div", { class: "meta" },
              `${d.type} · ${count(d.pages, "page")} · ${count(d.chunks, "chunk")} · ${d.status}` +
              (d.project ? ` · ${d.project}` : "") + ` · ${d.confidentiality}` +
              (d.summary_by === "model" ? " · model summary" : "")),
            element("div", { class: "summary" }, d.summary),
            d.may_remove
              ? element("button", {
                type: "button", class: "remove", title: `remove ${d.name} from the index`,
                onclick: () => removeDocument(d.name),
              }, "Remove")
              : "",
          ),
    ),
  );
  $("failures").replaceChildren(
    ...listed.failures.map((f) => element("li", {}, `${f.name} failed: ${f.reason}`)),
  );
  const filter = $("document-filter");
  const chosen = filter.value;
  filter.replaceChildren(
    element("option", { value: "" }, "all I may read"),
    ...listed.documents.map((d) => element("option", { value: d.name }, d.name)),
  );
  filter.value = listed.documents.some((d) => d.name === chosen) ? chosen : "";
}

// Run the ingest graph on `input`, each file's events to `onFile`; its output ({report, error}) when it ends.
async function runIngest(input, onFile = () => {}) {
  let outcome = null;
  await streamRun("/runs/stream", { assistant_id: "ingest", input, stream_mode: ["custom", "updates"] }, {
    custom: onFile,
    updates(data) {
      if (data.ingest) outcome = data.ingest;
    },
  });
  return outcome;
}

// Take a document out of the index (its chunks, vectors and keyword postings; the file stays), after asking.
async function removeDocument(name) {
  if (!window.confirm(`Remove ${name} from the index? Its file stays where it is.`)) return;
  try {
    const outcome = await runIngest({ remove: [name] });
    const file = outcome && outcome.report && outcome.report.files.find((f) => f.status !== "removed");
    if (outcome && outcome.error) showError(outcome.error);
    else if (file) showError(`${name}: ${file.reason}`);
  } catch (error) {
    showError(error.unreachable ? error.message : `Removing ${name} failed: ${error.message}`);
  } finally {
    await loadDocuments().catch((error) => showError(error.message));
  }
}

// POST the form with its bytes' progress (fetch cannot report an upload's progress).
function sendWithProgress(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", path);
    for (const [name, value] of Object.entries(headers())) request.setRequestHeader(name, value);
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    request.addEventListener("load", () => {
      if (request.status >= 200 && request.status < 300) resolve(JSON.parse(request.responseText));
      else reject(refused(request.status, request.statusText, request.responseText));
    });
    request.addEventListener("error", () => reject(unreachable()));
    request.send(form);
  });
}

function count(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function kilobytes(bytes) {
  return `${Math.ceil(bytes / 1024).toLocaleString()} kB`;
}

function setBar(bar, done, total) {
  bar.max = Math.max(total, 1);
  bar.value = done;
  bar.setAttribute("value", String(done)); // an attribute too, so that a watcher of the page sees it move
}

// One file's line: its name, what is happening to it, and a bar for its chunks while they are embedded.
function fileRow(name) {
  const row = { name, pages: 0, chunks: 0, embedded: 0, note: element("span", {}, "waiting"), bar: element("progress", { max: "1", value: "0", hidden: "" }) };
  row.root = element("li", { "data-name": name }, `${name}: `, row.note, row.bar);
  return row;
}

function fileEvent(row, data) {
  if (data.event === "file_started") row.note.textContent = "reading…";
  if (data.event === "file_parsed") {
    row.pages = data.pages;
    row.note.textContent = `read ${count(data.pages, "page")}`;
  }
  if (data.event === "file_embedding") {
    row.chunks = data.chunks;
    row.bar.hidden = false;
    setBar(row.bar, 0, data.chunks);
  }
  if (data.event === "chunks_embedded") {
    row.embedded += data.chunks;
    setBar(row.bar, row.embedded, row.chunks);
    row.note.textContent = `read ${count(row.pages, "page")}, embedding ${row.embedded} of ${row.chunks} chunks`;
  }
  if (data.event === "file_finished") {
    row.bar.hidden = true;
    row.note.textContent = data.status + (data.reason ? ` (${data.reason})` : "");
    row.root.classList.toggle("error", data.status === "failed");
  }
}

async function uploadAndIngest(event) {
  event.preventDefault();
  showError("");
  const files = [...$("upload-files").files];
  const progress = $("upload-progress");
  const status = $("upload-status");
  const bar = $("upload-bar");
  const note = $("upload-note");
  const failed = (message) => {
    status.hidden = true;
    progress.replaceChildren(element("li", { class: "error" }, message));
  };
  const tooLarge = files.find((f) => f.size > state.me.max_upload_bytes);
  if (tooLarge) {
    failed(`${tooLarge.name} is ${tooLarge.size.toLocaleString()} bytes; the limit is ${state.me.max_upload_bytes.toLocaleString()}`);
    return;
  }
  const form = new FormData();
  for (const file of files) form.append("file", file, file.name);
  const button = event.submitter || $("upload-form").querySelector("button");
  button.disabled = true;
  const total = files.reduce((sum, f) => sum + f.size, 0);
  progress.replaceChildren();
  status.hidden = false;
  setBar(bar, 0, total);
  note.textContent = `uploading ${count(files.length, "file")}, ${kilobytes(total)}`;
  try {
    const uploaded = await sendWithProgress("/ui/uploads", form, (loaded, size) => {
      setBar(bar, loaded, size);
      note.textContent = `uploading: ${kilobytes(loaded)} of ${kilobytes(size)}`;
    });
    note.textContent = "uploaded; ingesting";
    const rows = new Map(uploaded.files.map((f) => [f.name, fileRow(f.name)]));
    progress.replaceChildren(...[...rows.values()].map((row) => row.root));
    const input = {
      paths: uploaded.files.map((f) => f.path),
      confidentiality: $("upload-confidentiality").value,
    };
    if ($("upload-project").value.trim()) input.project = $("upload-project").value.trim();
    const outcome = await runIngest(input, (data) => {
      const row = rows.get(data.name);
      if (row) fileEvent(row, data);
    });
    status.hidden = true;
    if (outcome && outcome.error) progress.append(element("li", { class: "error" }, outcome.error));
    $("upload-files").value = "";
  } catch (error) {
    failed(error.unreachable ? error.message : `Upload failed: ${error.message}`);
  } finally {
    button.disabled = false;
    await loadDocuments().catch((error) => showError(error.message));
  }
}

// ---- runs ----

// POST a run and hand each server-sent event to handlers[kind] ("updates", "messages", "custom", ...).
async function streamRun(path, body, handlers) {
  const reply = await call(path, {
    method: "POST",
    body: JSON.stringify({ stream_subgraphs: true, ...body }),
    headers: { "content-type": "application/json", accept: "text/event-stream" },
  });
  const reader = reply.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    let part;
    try {
      part = await reader.read();
    } catch (_) {
      throw unreachable();
    }
    const { value, done } = part;
    if (done) break;
    buffered += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let end;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let kind = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) kind = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (!data.length) continue;
      const parsed = JSON.parse(data.join("\n"));
      kind = kind.split("|")[0];
      if (kind === "error") throw new Error(parsed.message || parsed.error || "the run failed");
      handlers[kind]?.(parsed);
    }
  }
}

function turnView(question) {
  const view = {
    root: element("div", { class: "turn" }),
    stages: element("ul", { class: "stages" }),
    evidence: element("div", { class: "evidence", hidden: "" }),
    band: element("div", { class: "band", hidden: "" }),
    answer: element("div", { class: "answer", hidden: "" }),
    sources: element("div", { class: "sources", hidden: "" }),
    footer: element("div", { class: "footer" }),
    shown: new Set(),
  };
  view.root.append(element("div", { class: "question" }, question), view.stages, view.evidence, view.band,
    view.answer, view.sources, view.footer);
  $("turns").append(view.root);
  return view;
}

function stage(view, label) {
  if (view.shown.has(label)) return;
  view.shown.add(label);
  for (const running of view.stages.querySelectorAll(".running")) running.classList.remove("running");
  view.stages.append(element("li", { class: "running" }, label));
  scrollDown();
}

// "searching: 15 passages from 1 document (read "Neflix" as "Netflix")", from the search's trace (a subgraph's
// updates carry no passages).
function searched(label, update) {
  const found = ((update && update.trace) || []).map((record) => record.details || {}).find((d) => d.passages);
  if (!found) return label;
  const respelled = Object.entries(found.spelling || {}).map(([written, read]) => ` (read "${written}" as "${read}")`);
  const plural = found.documents > 1 ? "s" : "";
  return `${label}: ${found.passages} passages from ${found.documents} document${plural}${respelled.join("")}`;
}

function scrollDown() {
  $("turns").scrollTop = $("turns").scrollHeight;
}

function citeLink(label, target) {
  return element("a", { class: "cite", onclick: () => openView(target) }, label);
}

// ---- answers as Markdown ----
// Structured outputs (blueprint, pdr, ...) are Markdown. The answer is built element by element from its text:
// headings, lists, tables, code, bold, italics and citations. Text only ever becomes text nodes, so HTML in a
// model's answer or in a document stays visible as written and never runs.

const LIST_ITEM = /^\s*([-*+]|\d+[.)])\s+/;
const BLOCK_START = /^(#{1,6}\s|```|\s*([-*+]|\d+[.)])\s|\s*\|)/;

function markdown(text, cite) {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (!line.trim()) {
      i++;
    } else if (line.startsWith("```")) {
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      i++;
      blocks.push(element("pre", {}, element("code", {}, code.join("\n"))));
    } else if (heading) {
      blocks.push(element(`h${Math.min(heading[1].length, 3)}`, {}, ...inline(heading[2], cite)));
      i++;
    } else if (LIST_ITEM.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = element(ordered ? "ol" : "ul");
      for (; i < lines.length && LIST_ITEM.test(lines[i]) && /^\s*\d/.test(lines[i]) === ordered; i++)
        list.append(element("li", {}, ...inline(lines[i].replace(LIST_ITEM, ""), cite)));
      blocks.push(list);
    } else if (line.trim().startsWith("|")) {
      const rows = [];
      for (; i < lines.length && lines[i].trim().startsWith("|"); i++) rows.push(lines[i]);
      blocks.push(markdownTable(rows, cite));
    } else {
      const paragraph = [line];
      for (i++; i < lines.length && lines[i].trim() && !BLOCK_START.test(lines[i]); i++) paragraph.push(lines[i]);
      blocks.push(element("p", {}, ...inline(paragraph.join("\n"), cite)));
    }
  }
  return blocks;
}

function markdownTable(rows, cite) {
  const cells = (row) => row.trim().replace(/^\||\|$/g, "").split("|").map((cell) => cell.trim());
  const body = rows.filter((row) => !/^\s*\|?\s*:?-{3,}/.test(row));
  const [head, ...rest] = body;
  if (!head) return element("p", {}, rows.join("\n")); // separators alone: no table
  return element("table", {},
    element("thead", {}, element("tr", {}, ...cells(head).map((c) => element("th", {}, ...inline(c, cite))))),
    element("tbody", {}, ...rest.map((row) => element("tr", {}, ...cells(row).map((c) => element("td", {}, ...inline(c, cite)))))));
}

// Bold, italics, code and [citation labels] within a line; a label the run cited opens its page.
function inline(text, cite) {
  const parts = text.split(/(\*\*[^*]+\*\*|`[^`]+`|\*[^*\s][^*]*\*|\[[^\[\]]+\])/);
  return parts.filter((part) => part).map((part) => {
    if (/^\*\*.+\*\*$/.test(part)) return element("strong", {}, part.slice(2, -2));
    if (/^`.+`$/.test(part)) return element("code", {}, part.slice(1, -1));
    if (/^\*.+\*$/.test(part)) return element("em", {}, part.slice(1, -1));
    if (part.startsWith("[")) return cite(part) || document.createTextNode(part);
    return document.createTextNode(part);
  });
}

// The citation links of an answer: its citations' labels, and those of its evidence sentences.
function citationFinder(values) {
  const targets = new Map();
  for (const h of values.highlights || [])
    targets.set(h.label, highlightTarget(h));
  for (const c of values.citations || []) targets.set(c.label, citationTarget(c, values.highlights));
  return (label) => (targets.has(label) ? citeLink(label, targets.get(label)) : null);
}

// What the model is writing, shown as it comes: without its excerpt numbers ("[2]"), which only the checked answer
// turns into labels.
function withoutExcerptNumbers(text) {
  return text.replace(/\s*\[\d+(?:\s*[,–-]\s*\d+)*\]|\s*\[[\d,\s–-]*$/g, "");
}

function showEvidence(view, highlights) {
  if (!highlights || !highlights.length || !view.evidence.hidden) return;
  view.evidence.hidden = false;
  view.evidence.replaceChildren(element("h4", {}, "Evidence"));
  for (const h of highlights) {
    view.evidence.append(element("div", {}, citeLink(h.label, highlightTarget(h)), " ", h.sentence.replace(/\s+/g, " ")));
  }
}

// The page view of an evidence sentence: its page with the sentence marked, else its passage.
function sentenceTarget(sentence) {
  if (sentence.page == null) return { chunk: sentence.chunk_ids };
  return { chunk: sentence.chunk_ids, page: sentence.page, start: sentence.start, end: sentence.end };
}

// A highlighted sentence's page view, marked.
function highlightTarget(h) {
  return { chunk: h.passage_id, page: h.page, start: h.start, end: h.end };
}

// A citation's page view: the sentence that states its values, else the best evidence sentence of its passage
// (marking the whole passage would box nearly every line of the page), else its passage's first page.
function citationTarget(c, highlights) {
  if (c.quote) return sentenceTarget(c.quote);
  const inside = (highlights || []).find((h) => c.chunk_ids.includes(h.passage_id));
  return inside ? highlightTarget(inside) : { chunk: c.chunk_ids, page: c.start_page };
}

function showAnswer(view, values) {
  for (const running of view.stages.querySelectorAll(".running")) running.classList.remove("running");
  showEvidence(view, values.highlights);
  if (values.abstained && values.highlights && values.highlights.length)
    view.evidence.append(element("div", { class: "closest" },
      "These are the closest passages, which do not answer the question."));
  view.answer.hidden = false;
  view.answer.classList.toggle("abstained", !!values.abstained);
  // An uncertain answer is no headline: it follows a line saying so, under the evidence, and reads dimmed.
  const uncertain = !values.abstained && values.band !== "supported";
  view.answer.classList.toggle("uncertain", uncertain);
  view.answer.replaceChildren(...markdown(values.answer || "", citationFinder(values)));
  view.band.hidden = !!values.abstained;
  view.band.className = `band ${values.band || "uncertain"}`;
  // the band's name in the question's language (`band_label`), capitalised as a line of its own
  const label = values.band_label || values.band || "uncertain";
  view.band.textContent = values.abstained ? "" : label.charAt(0).toUpperCase() + label.slice(1);
  const check = values.value_check;
  if (!values.abstained && check && check.computed)
    view.band.append(element("div", {}, "A calculation: the checks confirm values the evidence states, not arithmetic. Check it against the evidence."));
  if (uncertain && values.second_reading)
    view.band.append(element("div", {}, `Asked again over the top evidence sentences alone, the model read: ${values.second_reading}`));
  // an answer picked among candidates from the evidence: a value's words as its sentence writes them (a cell's row and
  // column are in the answer), and, for an uncertain pick, the candidate the model found next likeliest
  const pick = values.pick;
  const answeredByPick = !values.abstained && pick && pick.answered;
  for (const index of (answeredByPick && pick.picked) || [])
    if (pick.candidates[index].kind !== "cell")
      view.band.append(element("div", { class: "picked" }, `${pick.candidates[index].value}: “${pick.candidates[index].measures}”`));
  const second = answeredByPick && pick.runner_up !== null && pick.runner_up !== undefined ? pick.candidates[pick.runner_up] : null;
  if (uncertain && second)
    view.band.append(element("div", {}, `The model was ${Math.round(pick.probability * 100)}% sure of its pick; ` +
      `next likeliest: ${second.value}${second.measures ? ` (${second.measures})` : ""}, ` +
      `${Math.round((pick.runner_up_probability || 0) * 100)}%`));
  if (uncertain && check && check.status === "unsupported") {
    if (check.missing.length)
      view.band.append(element("div", {}, `${check.missing.join(", ")}: in no sentence the answer cites.`));
    // a table row's value for another period or column than the one asked, with the row as read in the asked one
    for (const doubt of [...(check.other_period || []), ...(check.other_column || [])]) view.band.append(element("div", {}, `${doubt}.`));
    if (check.closest)
      view.band.append(element("div", {}, "The closest evidence: ",
        citeLink(check.closest.label, sentenceTarget(check.closest)), " ", check.closest.sentence.replace(/\s+/g, " ")));
  }
  const citations = values.citations || [];
  view.sources.hidden = !citations.length;
  view.sources.replaceChildren(
    element("h4", {}, "Sources"),
    element("ol", {}, ...citations.map((c) =>
      element("li", {}, citeLink(c.label, citationTarget(c, values.highlights)),
        c.origin === "model" ? "" : " (attributed)"))),
  );
  view.footer.replaceChildren();
  if (!values.abstained && values.usage)
    view.footer.append(`confidence ${values.confidence.toFixed(2)} · ${values.usage.calls} model calls · ` +
      `${(values.usage.latency_ms / 1000).toFixed(1)} s in the model`);
  scrollDown();
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  showError("");
  const button = $("ask");
  button.disabled = true;
  const view = turnView(question);
  $("question").value = "";
  const graph = $("graph").value;
  try {
    if (!state.thread) {
      const thread = await post("/threads", { metadata: { title: question.slice(0, 80), graph } });
      state.thread = thread.thread_id;
    }
    const input = { question, output_type: $("output-type").value };
    if ($("document-filter").value) input.documents = [$("document-filter").value];
    let streamed = "";
    stage(view, "starting");
    await streamRun(`/threads/${state.thread}/runs/stream`, {
      assistant_id: graph,
      input,
      stream_mode: ["updates", "messages-tuple"],
    }, {
      updates(data) {
        for (const [node, update] of Object.entries(data)) {
          if (node === "highlight") showEvidence(view, update && update.highlights);
          const label = state.me.stages[node];
          if (label && !streamed) stage(view, searched(label, update));
        }
      },
      messages([chunk, metadata]) {
        if (!state.me.answer_nodes.includes(metadata.langgraph_node)) return;
        if (typeof chunk.content !== "string" || !chunk.content) return;
        if (!streamed) stage(view, "writing");
        streamed += chunk.content;
        view.answer.hidden = false;
        view.answer.textContent = withoutExcerptNumbers(streamed);
        scrollDown();
      },
    });
    const final = await json(`/threads/${state.thread}/state`);
    showAnswer(view, final.values);
  } catch (error) {
    for (const running of view.stages.querySelectorAll(".running")) running.classList.remove("running");
    const message = error.unreachable ? error.message : `The run failed: ${error.message}`;
    view.footer.replaceChildren(element("div", { class: "error" }, message));
  } finally {
    button.disabled = false;
    loadThreads().catch(() => {}); // the turn already says what failed
  }
}

// ---- threads ----

async function loadThreads() {
  const threads = await post("/threads/search", { limit: 30, sort_by: "updated_at", sort_order: "desc" });
  $("threads").replaceChildren(...threads.map((t) => element("li", {
    class: t.thread_id === state.thread ? "current" : "",
    onclick: () => openThread(t.thread_id),
  }, (t.metadata && t.metadata.title) || t.thread_id)));
}

async function openThread(threadId) {
  showError("");
  try {
    const shown = await json(`/threads/${threadId}/state`);
    state.thread = threadId;
    $("turns").replaceChildren();
    const values = shown.values || {};
    const turns = values.history || [];
    turns.forEach((turn, i) => {
      const view = turnView(turn.question);
      if (i === turns.length - 1) showAnswer(view, values);
      else { view.answer.hidden = false; view.answer.replaceChildren(...markdown(turn.answer, () => null)); }
    });
    loadThreads();
  } catch (error) {
    showError(`Cannot open that thread: ${error.message}`);
  }
}

function newThread() {
  state.thread = null;
  $("turns").replaceChildren();
  loadThreads();
  $("question").focus();
}

// ---- the citation viewer ----

async function openView(target) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(target))
    for (const one of [].concat(value ?? [])) query.append(name, one);
  let shown;
  try {
    shown = await json(`/ui/view?${query}`);
  } catch (error) {
    showError(`Cannot show that page: ${error.message}`);
    return;
  }
  showError("");
  state.view = shown;
  $("app").classList.add("viewing");
  $("viewer").hidden = false;
  $("viewer-title").textContent = `${shown.document.name}, page ${shown.page} of ${shown.document.pages}`;
  $("page-prev").disabled = shown.page <= 1;
  $("page-next").disabled = shown.page >= shown.document.pages;
  const image = $("page-image");
  const boxes = $("page-boxes");
  boxes.replaceChildren();
  const text = $("page-text");
  if (shown.image) {
    $("page-frame").hidden = false;
    text.hidden = true;
    const blob = await (await call(shown.image)).blob();
    if (image.src) URL.revokeObjectURL(image.src);
    image.alt = `page ${shown.page} of ${shown.document.name}`;
    image.src = URL.createObjectURL(blob);
    for (const [left, top, right, bottom] of shown.boxes) {
      boxes.append(element("div", {
        class: "highlight-box",
        style: `left:${left * 100}%;top:${top * 100}%;width:${(right - left) * 100}%;height:${(bottom - top) * 100}%`,
      }));
    }
  } else {
    $("page-frame").hidden = true;
    image.removeAttribute("src");
    text.hidden = false;
    text.replaceChildren();
    const [start, end] = shown.mark || [0, 0];
    text.append(shown.text.slice(0, start));
    if (end > start) text.append(element("mark", {}, shown.text.slice(start, end)));
    text.append(shown.text.slice(end));
  }
  (boxes.firstChild || text.querySelector("mark"))?.scrollIntoView({ block: "center" });
}

function turnPage(step) {
  const shown = state.view;
  if (shown) openView({ document: shown.document.id, page: shown.page + step });
}

function closeView() {
  $("viewer").hidden = true;
  $("app").classList.remove("viewing");
}

// ---- wiring ----

window.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.key = $("api-key").value.trim();
    sessionStorage.setItem(KEY, state.key);
    signIn();
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    state.key = "";
    state.thread = null;
    $("turns").replaceChildren();
    closeView();
    signIn();
  });
  $("ask-form").addEventListener("submit", ask);
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("upload-form").addEventListener("submit", uploadAndIngest);
  $("new-thread").addEventListener("click", newThread);
  $("page-prev").addEventListener("click", () => turnPage(-1));
  $("page-next").addEventListener("click", () => turnPage(1));
  $("viewer-close").addEventListener("click", closeView);
  signIn();
});
