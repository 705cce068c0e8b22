"""The web page on a real `pagegraph serve` (loopback, free port, scripted model): every new route refused or
narrowed as the user's rights say, across two editors and two readers of different ceilings; then a real headless
Chromium signs in, uploads, asks and opens a cited page.

Users: root (admin); ed and eve (editors of corp, up to internal); rita (reader of corp, internal); pub (reader
of corp, public only). Indexed by root: a corp/internal PDF, a corp/confidential note, an ops/internal note, and a
corp/public handbook."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from pagegraph import GRAPH_NAMES
from tests.conftest import REPO
from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, server_env
from tests.pdf_factory import corrupt_pdf, text_pdf

pytestmark = pytest.mark.slow
USERS = {
    "root": ["--role", "admin"],
    "ed": ["--role", "editor", "--projects", "corp", "--ceiling", "internal"],
    "eve": ["--role", "editor", "--projects", "corp", "--ceiling", "internal"],
    "rita": ["--role", "reader", "--projects", "corp", "--ceiling", "internal"],
    "pub": ["--role", "reader", "--projects", "corp", "--ceiling", "public"],
}
PRICING = [
    ("Pricing", "The Falcon plan costs 41 dollars a month for each seat."),
    ("Discounts", "Teams of more than fifty seats receive a discount of twelve percent on the Falcon plan."),
]
ANSWER = "The SB-40 stores up to 10.2 kWh of energy [1]."
# asked for with MARKDOWN_MARK in the question: a structured answer, with HTML that must stay text
MARKDOWN_MARK = "As a Markdown note:"
MARKDOWN_ANSWER = (
    "# Falcon pricing\n\nThe Falcon plan costs **41 dollars** a month [1].\n\n"
    "- <script>window.ranFromAnswer = true</script> stays text [1]\n- <b>not bold</b>"
)
# asked for with WORDS_MARK in the question: an answer in words, stating no value its citation could quote
WORDS_MARK = "In words:"
WORDS_ANSWER = "Visitors collect their badges at the north gate [1]."
UNREACHABLE = "The server is not reachable — is `pagegraph serve` running?"
MANUAL = REPO / "samples" / "sb40-user-manual.pdf"
UPLOAD_LIMIT = 200_000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("web-server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    shared = folder / "uploads"
    shared.mkdir()
    text_pdf(shared / "pricing.pdf", PRICING)
    (shared / "merger.md").write_text("# Merger\n\nThe merger closes in March at 41 dollars a share.\n")
    (shared / "ops.md").write_text("# Ops\n\nThe night shift starts at 22:00 every weekday.\n")
    (shared / "handbook.md").write_text("# Handbook\n\nExpenses are filed by the fifth day of each month.\n")
    keys = add_users(folder / "users.json", USERS)
    model = ScriptedOpenAI(
        reply=lambda prompt: (
            MARKDOWN_ANSWER if MARKDOWN_MARK in prompt else WORDS_ANSWER if WORDS_MARK in prompt else ANSWER
        ),
        every_call_s=0.3,
    )
    model.start()
    env = server_env(
        folder,
        cache_dir,
        folder / "users.json",
        PAGEGRAPH_UPLOAD_DIR=str(shared),
        PAGEGRAPH_USER_UPLOAD_DIR=str(folder / "user-uploads"),
        PAGEGRAPH_MAX_UPLOAD_BYTES=str(UPLOAD_LIMIT),
        PAGEGRAPH_RUNS_PER_USER_PER_MINUTE="100",
        **model.settings(),
    )
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    server.start()
    try:
        for name, project, level in [
            ("pricing.pdf", "corp", "internal"),
            ("merger.md", "corp", "confidential"),
            ("ops.md", "ops", "internal"),
            ("handbook.md", "corp", "public"),
        ]:
            reply = asyncio.run(ingest(server, keys["root"], [shared / name], project, level))
            assert [f["status"] for f in reply["report"]["files"]] == ["added"], reply
        with httpx.Client(base_url=server.url, timeout=30) as client:
            listed = client.get("/ui/documents", headers={"x-api-key": keys["root"]}).json()["documents"]
            yield {
                "server": server,
                "keys": keys,
                "client": client,
                "ids": {d["name"]: d["id"] for d in listed},
                "folder": folder,
            }
    finally:
        server.stop()
        model.stop()


async def ingest(server: Server, key: str, paths: list, project: str | None, confidentiality: str) -> dict:
    payload = {"paths": [str(p) for p in paths], "project": project, "confidentiality": confidentiality}
    return await get_client(url=server.url, api_key=key).runs.wait(None, "ingest", input=payload)


def get(site: dict, user: str | None, path: str, **params) -> httpx.Response:
    headers = {"x-api-key": site["keys"][user]} if user else {}
    return site["client"].get(path, headers=headers, params=params)


def names(site: dict, user: str) -> set[str]:
    return {d["name"] for d in get(site, user, "/ui/documents").json()["documents"]}


def upload(site: dict, user: str | None, files: list[tuple[str, bytes]], page: bool = True) -> httpx.Response:
    """An upload as the web page sends it (with its `x-requested-with` header; `page=False`: as a cross-site form
    would, without it)."""
    headers = {"x-api-key": site["keys"][user]} if user else {}
    if page:
        headers["x-requested-with"] = "pagegraph"
    parts = [("file", (name, data)) for name, data in files]
    return site["client"].post("/ui/uploads", headers=headers, files=parts)


def test_the_page_and_its_assets_are_served_from_the_package(site: dict) -> None:
    page = get(site, None, "/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for asset in ("/ui/static/app.js", "/ui/static/app.css", "/ui/static/favicon.svg"):
        assert get(site, None, asset).status_code == 200
    icon = get(site, None, "/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert "http://" not in page.text and "https://" not in page.text, "nothing is fetched from outside"


@pytest.mark.parametrize(
    "path",
    ["/ui/me", "/ui/documents", "/ui/view?document=x&page=1", "/ui/pages/x/1.png"],
)
def test_every_route_needs_a_key(site: dict, path: str) -> None:
    assert get(site, None, path).status_code == 401
    wrong = site["client"].get(path, headers={"x-api-key": "pg_nobody_secret"})
    assert wrong.status_code == 401
    assert upload(site, None, [("a.md", b"# A\n\ntext\n")]).status_code == 401


def test_me_says_who_is_signed_in(site: dict) -> None:
    pub = get(site, "pub", "/ui/me").json()
    assert (pub["user"], pub["role"], pub["ceiling"], pub["may_upload"]) == ("pub", "reader", "public", False)
    assert pub["graphs"] == list(GRAPH_NAMES)  # the registry's graphs, in its order
    assert get(site, "ed", "/ui/me").json()["may_upload"] is True


def test_document_lists_follow_projects_and_ceilings(site: dict) -> None:
    assert {"pricing.pdf", "merger.md", "ops.md", "handbook.md"} <= names(site, "root")
    assert {"pricing.pdf", "handbook.md"} <= names(site, "rita") and not {"merger.md", "ops.md"} & names(site, "rita")
    assert "handbook.md" in names(site, "pub") and not {"pricing.pdf", "merger.md", "ops.md"} & names(site, "pub")
    pdf = next(d for d in get(site, "rita", "/ui/documents").json()["documents"] if d["name"] == "pricing.pdf")
    assert (pdf["type"], pdf["pages"], pdf["status"]) == ("pdf", 2, "searchable") and pdf["chunks"] >= 1


def test_pages_and_views_of_a_document_out_of_reach_read_as_missing(site: dict) -> None:
    ids = site["ids"]
    image = get(site, "rita", f"/ui/pages/{ids['pricing.pdf']}/1.png")
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")
    missing = get(site, "pub", "/ui/pages/no-such-document/1.png")
    assert missing.status_code == 404
    for user, name in [("pub", "pricing.pdf"), ("rita", "merger.md"), ("rita", "ops.md")]:
        for path, params in [
            (f"/ui/pages/{ids[name]}/1.png", {}),
            ("/ui/view", {"document": ids[name], "page": 1}),
        ]:
            refused = get(site, user, path, **params)
            assert (refused.status_code, refused.json()) == (404, missing.json()), (user, name, path)
            assert b"41 dollars" not in refused.content
    assert get(site, "rita", f"/ui/pages/{ids['pricing.pdf']}/9.png").status_code == 404


def test_a_cited_passage_is_marked_on_its_page(site: dict) -> None:
    reply = asyncio.run(
        get_client(url=site["server"].url, api_key=site["keys"]["rita"]).runs.wait(
            None, "basic", input={"question": "What discount do teams of more than fifty seats get?"}
        )
    )
    hit = next(e for e in reply["evidence"] if e["source"] == "pricing.pdf")
    shown = get(site, "rita", "/ui/view", chunk=hit["chunk_ids"], page=hit["start_page"]).json()
    assert shown["document"]["name"] == "pricing.pdf" and shown["image"].endswith(f"/{hit['start_page']}.png")
    start, end = shown["mark"]
    assert shown["text"][start:end].strip() and shown["boxes"], "the passage is found on the rendered page"
    for left, top, right, bottom in shown["boxes"]:
        assert 0 <= left < right <= 1 and 0 <= top < bottom <= 1
    page_two = get(site, "rita", "/ui/view", document=shown["document"]["id"], page=2).json()
    sentence = page_two["text"].index("Teams of more")
    marked = get(site, "rita", "/ui/view", chunk=hit["id"], page=2, start=sentence, end=sentence + 30).json()
    assert marked["mark"] == [sentence, sentence + 30] and marked["boxes"]
    assert get(site, "pub", "/ui/view", chunk=hit["id"], page=2).status_code == 404


def test_the_search_graph_finds_only_what_the_user_may_read(site: dict) -> None:
    async def search(user: str, query: str, **narrowed: object) -> dict:
        client = get_client(url=site["server"].url, api_key=site["keys"][user])
        return await client.runs.wait(None, "search", input={"question": query, **narrowed})

    found = asyncio.run(search("rita", "How much does the Falcon plan cost?"))
    assert found["retrieved"][0]["source"] == "pricing.pdf" and set(found) == {"retrieved", "highlights", "trace"}
    assert found["highlights"][0]["source"] == "pricing.pdf" and "Falcon plan" in found["highlights"][0]["sentence"]
    for user in ("rita", "pub"):  # the confidential note is above both ceilings, the ops note outside corp
        sources = {p["source"] for p in asyncio.run(search(user, "When does the merger close?"))["retrieved"]}
        assert sources and not sources & {"merger.md", "ops.md"}, (user, sources)
    widened = asyncio.run(search("pub", "Falcon plan", filters={"max_confidentiality": "confidential"}))
    assert {p["source"] for p in widened["retrieved"]} <= {"handbook.md"}, "a filter narrows, never widens"
    assert {p["source"] for p in asyncio.run(search("root", "When does the merger close?"))["retrieved"]} >= {
        "merger.md"
    }


def test_a_text_source_shows_its_page_text_with_the_passage_marked(site: dict) -> None:
    reply = asyncio.run(
        get_client(url=site["server"].url, api_key=site["keys"]["pub"]).runs.wait(
            None, "basic", input={"question": "By which day of the month are expenses filed?"}
        )
    )
    hit = next(e for e in reply["evidence"] if e["source"] == "handbook.md")
    shown = get(site, "pub", "/ui/view", chunk=hit["chunk_ids"], page=hit["start_page"]).json()
    assert shown["image"] is None and shown["boxes"] == []
    start, end = shown["mark"]
    assert "fifth day of each month" in shown["text"][start:end]


def test_uploads_are_for_editors_and_go_to_their_own_folder(site: dict) -> None:
    note = [("notes.md", b"# Notes\n\nThe kickoff is on Tuesday.\n")]
    refused = upload(site, "rita", note)
    assert refused.status_code == 403 and "role reader" in refused.json()["detail"]
    assert upload(site, "ed", [("tool.exe", b"MZ")]).status_code == 415
    too_big = upload(site, "ed", [("big.txt", b"x" * (UPLOAD_LIMIT + 10))])
    assert too_big.status_code == 413 and "PAGEGRAPH_MAX_UPLOAD_BYTES" in too_big.json()["detail"]
    form = upload(site, "ed", note, page=False)  # a multipart form another site's page could post
    assert form.status_code == 403 and "JSON" in form.json()["detail"]
    long_name = upload(site, "ed", [("n" * 300 + ".md", note[0][1])])
    assert long_name.status_code == 400 and "at most" in long_name.json()["detail"]
    assert not list((site["folder"] / "user-uploads").rglob(".upload-*")), "no temporary file is left behind"
    for page in ("-1", "1.5", "abc", "0"):
        reply = get(site, "ed", f"/ui/pages/no-such-document/{page}.png")
        assert reply.status_code in (400, 404), (page, reply.status_code)
    saved = upload(site, "ed", [("../../escape.md", note[0][1])]).json()["files"]
    assert [f["name"] for f in saved] == ["escape.md"]
    assert Path(saved[0]["path"]).parent == site["folder"] / "user-uploads" / "ed"
    # eve may not ingest what ed uploaded, by path or by name
    for named in (saved[0]["path"], "escape.md", "../ed/escape.md"):
        reply = asyncio.run(ingest(site["server"], site["keys"]["eve"], [named], "corp", "internal"))
        assert [f["status"] for f in reply["report"]["files"]] == ["failed"], named
    reply = asyncio.run(ingest(site["server"], site["keys"]["ed"], [saved[0]["path"]], "corp", "internal"))
    assert [f["status"] for f in reply["report"]["files"]] == ["added"]
    assert "escape.md" in names(site, "rita")


def test_failures_are_shown_to_the_uploader(site: dict, tmp_path: Path) -> None:
    broken = corrupt_pdf(tmp_path / "broken.pdf").read_bytes()
    path = upload(site, "eve", [("broken.pdf", broken)]).json()["files"][0]["path"]
    reply = asyncio.run(ingest(site["server"], site["keys"]["eve"], [path], "corp", "internal"))
    assert [f["status"] for f in reply["report"]["files"]] == ["failed"]
    failures = get(site, "eve", "/ui/documents").json()["failures"]
    assert [f["name"] for f in failures] == ["broken.pdf"] and failures[0]["reason"]
    assert get(site, "ed", "/ui/documents").json()["failures"] == []


def test_threads_are_their_owners_alone(site: dict) -> None:
    rita = get_client(url=site["server"].url, api_key=site["keys"]["rita"])
    pub = get_client(url=site["server"].url, api_key=site["keys"]["pub"])

    async def scenario() -> tuple[str, list, list]:
        thread = await rita.threads.create(metadata={"title": "pricing"})
        await rita.runs.wait(thread["thread_id"], "basic", input={"question": "How much does the Falcon plan cost?"})
        return thread["thread_id"], await pub.threads.search(limit=50), await rita.threads.search(limit=50)

    thread_id, seen_by_pub, seen_by_rita = asyncio.run(scenario())
    assert thread_id in {t["thread_id"] for t in seen_by_rita}
    assert thread_id not in {t["thread_id"] for t in seen_by_pub}
    pub_key = {"x-api-key": site["keys"]["pub"]}
    for method, part, body in [
        ("GET", "state", None),
        ("POST", "state", {"values": {"question": "mine now"}}),
        ("GET", "history", None),
        ("POST", "history", {"limit": 5}),
        ("POST", "copy", {}),
        ("GET", "runs", None),
    ]:
        reply = site["client"].request(method, f"/threads/{thread_id}/{part}", json=body, headers=pub_key)
        assert reply.status_code == 404, (method, part, reply.status_code, reply.text[:200])


def test_chat_clients_send_messages(site: dict) -> None:
    """LangChain's Agent Chat UI and useStream send `messages`, not `question`; the thread keeps them in step."""
    client = get_client(url=site["server"].url, api_key=site["keys"]["rita"])

    async def scenario() -> dict:
        thread = await client.threads.create()
        asked = {"messages": [{"type": "human", "content": "How much does the Falcon plan cost?"}]}
        await client.runs.wait(thread["thread_id"], "basic", input=asked)
        await client.runs.wait(thread["thread_id"], "basic", input={"question": "And the discount?"})
        return (await client.threads.get_state(thread["thread_id"]))["values"]

    values = asyncio.run(scenario())
    kinds = [(m["type"], m["content"]) for m in values["messages"]]
    assert kinds == [
        ("human", "How much does the Falcon plan cost?"),
        ("ai", values["history"][0]["answer"]),
        ("human", "And the discount?"),
        ("ai", values["answer"]),
    ]


# ---- a real browser ----


def browser_paths() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (browser and driver):
        pytest.skip(
            "no headless Chromium here: scripts/test.sh installs Debian's chromium and chromium-driver with apt"
        )
    return browser, driver


@pytest.fixture
def browser() -> Iterator:
    webdriver = pytest.importorskip("selenium.webdriver")
    binary, driver_path = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=webdriver.ChromeService(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


# Records, in the page itself, the order in which a run's parts appear in the conversation.
WATCH_ORDER = """
window.seen = [];
const note = (what) => { if (!window.seen.includes(what)) window.seen.push(what); };
new MutationObserver(() => {
  const turn = document.querySelector('#turns .turn:last-child');
  if (!turn) return;
  if (turn.querySelector('.stages li')) note('stage');
  const answer = turn.querySelector('.answer'), sources = turn.querySelector('.sources');
  if (answer && !answer.hidden && answer.textContent && sources.hidden) note('tokens');
  if (sources && !sources.hidden) note('final');
}).observe(document.getElementById('turns'), {subtree: true, childList: true, characterData: true, attributes: true});
"""


def test_a_browser_user_uploads_asks_and_checks_a_citation(site: dict, browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(site["server"].url + "/")
    wait.until(lambda d: d.find_element(By.ID, "api-key").is_displayed())
    browser.find_element(By.ID, "api-key").send_keys(site["keys"]["ed"])
    browser.find_element(By.CSS_SELECTOR, "#sign-in-form button").click()
    wait.until(lambda d: d.find_element(By.ID, "upload-form").is_displayed())
    browser.find_element(By.ID, "upload-files").send_keys(str(MANUAL))
    browser.find_element(By.ID, "upload-project").send_keys("corp")
    browser.find_element(By.CSS_SELECTOR, "#upload-form button").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#documents li[data-name="{MANUAL.name}"]'))
    assert "added" in browser.find_element(By.ID, "upload-progress").text

    browser.execute_script(WATCH_ORDER)
    browser.find_element(By.ID, "question").send_keys("How much enregy does the SB-40 store?\n")  # misspelt
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".turn .sources a.cite"))
    assert browser.execute_script("return window.seen") == ["stage", "tokens", "final"]
    stages = [li.text for li in browser.find_elements(By.CSS_SELECTOR, ".turn .stages li")]
    searched = r'searching: \d+ passages from (1 document|\d+ documents) \(read "enregy" as "energy"\)'
    assert any(re.fullmatch(searched, s) for s in stages), stages
    assert ANSWER.split(" [")[0] in browser.find_element(By.CSS_SELECTOR, ".turn .answer").text
    assert browser.find_elements(By.CSS_SELECTOR, ".turn .evidence a.cite"), "evidence is shown with the answer"
    band = browser.find_element(By.CSS_SELECTOR, ".turn .band")
    assert band.is_displayed() and band.text.split(" ")[0] in ("Supported", "Uncertain"), band.text
    answer_classes = browser.find_element(By.CSS_SELECTOR, ".turn .answer").get_attribute("class")
    assert ("uncertain" in answer_classes) == band.text.startswith("Uncertain"), "an uncertain answer is no headline"

    source = next(
        link for link in browser.find_elements(By.CSS_SELECTOR, ".turn .sources a.cite") if MANUAL.name in link.text
    )
    source.click()
    wait.until(
        lambda d: d.execute_script(
            "const i = document.getElementById('page-image'); return i.complete && i.naturalWidth > 0"
        )
    )
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#page-boxes .highlight-box"))
    box = browser.find_element(By.CSS_SELECTOR, "#page-boxes .highlight-box")
    assert box.size["width"] > 20 and box.size["height"] > 5
    if target := os.environ.get("PAGEGRAPH_SCREENSHOT"):
        browser.save_screenshot(target)

    shown = browser.find_element(By.ID, "viewer-title").text
    document_id = next(
        d["id"] for d in get(site, "ed", "/ui/documents").json()["documents"] if d["name"] == MANUAL.name
    )
    page = shown.split("page ")[1].split(" ")[0]
    assert get(site, "ed", f"/ui/pages/{document_id}/{page}.png").status_code == 200
    assert get(site, "pub", f"/ui/pages/{document_id}/{page}.png").status_code == 404
    assert MANUAL.name not in names(site, "pub") and MANUAL.name in names(site, "rita")
    browser.find_element(By.ID, "page-next").click()
    wait.until(lambda d: f"page {int(page) + 1} of" in d.find_element(By.ID, "viewer-title").text)
    assert json.loads(browser.execute_script("return JSON.stringify(window.seen)")) == ["stage", "tokens", "final"]


# Records every value the upload bars take (the page sets them as attributes too).
WATCH_BARS = """
window.bars = [];
new MutationObserver((changes) => {
  for (const change of changes)
    if (change.target.tagName === 'PROGRESS')
      window.bars.push([change.target.id || 'file', Number(change.target.getAttribute('value')), change.target.max]);
}).observe(document.getElementById('upload-form'), {subtree: true, attributes: true, attributeFilter: ['value']});
"""


def sign_in(browser, site: dict, user: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(site["server"].url + "/")
    wait.until(lambda d: d.find_element(By.ID, "api-key").is_displayed())
    browser.find_element(By.ID, "api-key").send_keys(site["keys"][user])
    browser.find_element(By.CSS_SELECTOR, "#sign-in-form button").click()
    wait.until(lambda d: d.find_element(By.ID, "ask-form").is_displayed())
    return wait


def test_a_browser_user_sees_upload_progress_markdown_answers_and_a_clear_error(
    site: dict, browser, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    wait = sign_in(browser, site, "ed")
    note = tmp_path / "crane-notes.md"
    note.write_text(
        "# Cranes\n\n<script>window.ranFromDocument = true</script> The harbour crane lifts 40 tonnes.\n\n"
        + "The crane is inspected every spring before the shipping season opens. " * 120
    )
    browser.execute_script(WATCH_BARS)
    browser.find_element(By.ID, "upload-files").send_keys(str(note))
    browser.find_element(By.ID, "upload-project").send_keys("corp")
    browser.find_element(By.CSS_SELECTOR, "#upload-form button").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#documents li[data-name="{note.name}"]'))
    row = browser.find_element(By.CSS_SELECTOR, f'#upload-progress li[data-name="{note.name}"]')
    assert row.text == f"{note.name}: added", row.text
    bars = browser.execute_script("return window.bars")
    uploaded = [(value, total) for name, value, total in bars if name == "upload-bar"]
    embedded = [(value, total) for name, value, total in bars if name == "file"]
    assert uploaded[0][0] == 0 and uploaded[-1][0] == uploaded[-1][1] >= note.stat().st_size, bars
    assert embedded and embedded[-1][0] == embedded[-1][1] > 0, "the file's bar reached its chunk count"
    assert browser.find_element(By.ID, "upload-status").get_attribute("hidden") is not None, "the bar is cleared"

    Select(browser.find_element(By.ID, "graph")).select_by_value("basic")
    browser.find_element(By.ID, "question").send_keys(f"{MARKDOWN_MARK} How much does the Falcon plan cost?\n")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".turn:last-child .sources a.cite"))
    answer = browser.find_element(By.CSS_SELECTOR, ".turn:last-child .answer")
    assert answer.find_element(By.CSS_SELECTOR, "h1").text == "Falcon pricing"
    assert answer.find_element(By.CSS_SELECTOR, "strong").text == "41 dollars"
    items = [li.text for li in answer.find_elements(By.CSS_SELECTOR, "li")]
    assert (
        items[0].startswith("<script>window.ranFromAnswer = true</script> stays text") and items[1] == "<b>not bold</b>"
    )
    assert not answer.find_elements(By.CSS_SELECTOR, "script, b"), "the model's HTML is text"
    browser.find_element(By.ID, "question").send_keys("How much does the harbour crane lift?\n")
    wait.until(
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, ".turn .sources")) == 2
            and d.find_elements(By.CSS_SELECTOR, ".turn:last-child .footer")[0].text
        )
    )
    evidence = browser.find_element(By.CSS_SELECTOR, ".turn:last-child .evidence").text
    assert "<script>window.ranFromDocument = true</script>" in evidence or "40 tonnes" in evidence, evidence
    assert browser.execute_script("return [window.ranFromAnswer, window.ranFromDocument]") == [None, None]

    first = browser.find_elements(By.CSS_SELECTOR, ".turn")[-2]
    cited = first.find_elements(By.CSS_SELECTOR, ".answer a.cite")
    assert cited and cited[0].text.startswith("[pricing.pdf"), "the answer's own citation is a link"
    cited[0].click()
    wait.until(lambda d: "pricing.pdf, page" in d.find_element(By.ID, "viewer-title").text)

    browser.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    try:
        browser.find_element(By.ID, "question").send_keys("Is anyone there?\n")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".turn:last-child .footer .error"))
        assert browser.find_element(By.CSS_SELECTOR, ".turn:last-child .footer .error").text == UNREACHABLE
    finally:
        browser.delete_network_conditions()


def conversation_width(browser) -> int:
    return browser.execute_script("return document.getElementById('conversation').getBoundingClientRect().width")


def test_a_source_boxes_its_cited_sentence_and_the_layout_holds_from_360_px(
    site: dict, browser, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    wait = sign_in(browser, site, "ed")
    rules = [f"Hall {n} opens at the {side} door and closes when its last tour ends." for n, side in
             zip(range(1, 25), ["east", "west", "south", "upper"] * 6)]  # fmt: skip
    rules.insert(12, "Visitors collect their badges at the north gate before any tour.")
    guide = text_pdf(tmp_path / "visitor-guide.pdf", [("Visitor rules", " ".join(rules))])
    browser.find_element(By.ID, "upload-files").send_keys(str(guide))
    browser.find_element(By.ID, "upload-project").send_keys("corp")
    browser.find_element(By.CSS_SELECTOR, "#upload-form button").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#documents li[data-name="{guide.name}"]'))
    browser.find_element(By.ID, "question").send_keys(f"{WORDS_MARK} Where do visitors collect their badges?\n")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".turn:last-child .sources a.cite"))
    source = next(
        link
        for link in browser.find_elements(By.CSS_SELECTOR, ".turn:last-child .sources a.cite")
        if guide.name in link.text
    )
    source.click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#page-boxes div"))
    boxes = browser.find_elements(By.CSS_SELECTOR, "#page-boxes div")
    assert 1 <= len(boxes) <= 3, f"{len(boxes)} boxes: the cited sentence is boxed, not its whole passage"

    browser.set_window_size(1440, 900)
    assert browser.find_element(By.ID, "viewer").is_displayed() and conversation_width(browser) >= 500
    for width in (800, 360):  # the viewer lies over the conversation instead of squeezing it
        browser.set_window_size(width, 800)
        wait.until(lambda d, width=width: d.execute_script("return window.innerWidth") <= width)
        assert conversation_width(browser) >= min(300, 0.8 * width), (width, conversation_width(browser))
        scroll, visible = browser.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert scroll <= visible, f"a horizontal scrollbar at {width} px"
    browser.find_element(By.ID, "viewer-close").click()
    assert conversation_width(browser) >= 300
    shot = tmp_path / "narrow.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 1000

    browser.set_window_size(1440, 900)
    card = browser.find_element(By.CSS_SELECTOR, f'#documents li[data-name="{guide.name}"]')
    card.find_element(By.CSS_SELECTOR, "button.remove").click()
    browser.switch_to.alert.accept()
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, f'#documents li[data-name="{guide.name}"]'))
    assert guide.name not in names(site, "ed") and guide.name not in names(site, "root")


def test_only_editors_of_a_document_may_remove_it(site: dict) -> None:
    listed = {d["name"]: d for d in get(site, "rita", "/ui/documents").json()["documents"]}
    assert listed and not any(d["may_remove"] for d in listed.values()), "a reader has no Remove button"
    assert all(d["may_remove"] for d in get(site, "ed", "/ui/documents").json()["documents"])
    client = get_client(url=site["server"].url, api_key=site["keys"]["rita"])
    refused = asyncio.run(client.runs.wait(None, "ingest", input={"remove": ["pricing.pdf"]}))
    assert "rita may not remove documents" in refused["error"] and "pricing.pdf" in names(site, "rita")
    other = get_client(url=site["server"].url, api_key=site["keys"]["ed"])
    reply = asyncio.run(other.runs.wait(None, "ingest", input={"remove": ["ops.md"]}))  # another project's
    assert [f["status"] for f in reply["report"]["files"]] == ["failed"] and "ops.md" in names(site, "root")
