"""Other web pages, opened in headless Chromium, try to use a running `attache lab`.

Usage: other-site.py LAB_URL

A developer with the lab open also browses other sites. Such a page can make the browser send
requests to the lab (forms, `no-cors` fetches need no preflight) and, through DNS rebinding, read
the answers under its own name. Here a real browser sends what it sends (its own `Origin`,
`Sec-Fetch-Site`, `Host`), and the statuses it received are read from its network log:

- a page on another port of 127.0.0.1 (another origin, the same site) and a page on another site
  (`evil.test`, mapped to 127.0.0.1 by `--host-resolver-rules`, never a real lookup) POST a run as
  `text/plain`, as a form, and read the setup with `fetch`: every `/api/` request is refused (403
  or 415) and the reading page gets nothing;
- the rebinding: `evil.test` on the lab's own port, which the browser takes for the lab's origin,
  is refused (421) for the page and for its same-origin fetches.
"""
import http.server
import json
import socket
import sys
import threading
import time
from urllib.parse import urlsplit

import chromium
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

lab = sys.argv[1].rstrip("/")
lab_port = urlsplit(lab).port
check = chromium.Checks()


RUN = json.dumps({"payload": '{"aps":{"alert":"x","mutable-content":1},"image":"http://127.0.0.1:1/x.jpg"}',
                  "deadline_ms": 1000, "profile": "none"})

# What another site's page does, told where the lab is. Each attempt records what the page could
# see; the browser's own network log says what the lab answered.
ATTACK = """<!doctype html><title>other site</title>
<form id="form" method="POST" enctype="text/plain" target="sink" action="LAB/api/run">
<input name='BODY' value=''></form><iframe name="sink"></iframe>
<script>
const lab = "LAB", body = BODY_JSON, seen = {};
async function attempt(name, request) {
  try { const r = await request(); seen[name] = {type: r.type, status: r.status, text: r.type === "opaque" ? "" : await r.text()}; }
  catch (e) { seen[name] = {error: String(e)}; }
}
(async () => {
  await attempt("text-plain-run", () => fetch(lab + "/api/run?via=text-plain", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body}));
  await attempt("form-encoded-run", () => fetch(lab + "/api/run?via=form-encoded", {method: "POST", mode: "no-cors", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body}));
  await attempt("read-setup", () => fetch(lab + "/api/setup?via=cors"));
  document.getElementById("form").action = lab + "/api/run?via=form";
  document.getElementById("form").submit();
  await new Promise(r => setTimeout(r, 500));
  document.body.dataset.seen = JSON.stringify(seen);
})();
</script>"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OtherSite(http.server.BaseHTTPRequestHandler):
    target = lab

    def do_GET(self):
        page = ATTACK.replace("LAB", self.target).replace("BODY_JSON", json.dumps(RUN)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


other_port = free_port()
server = http.server.ThreadingHTTPServer(("127.0.0.1", other_port), OtherSite)
threading.Thread(target=server.serve_forever, daemon=True).start()

# evil.test is 127.0.0.1 for this browser alone; nothing is looked up. The performance log is
# where the statuses the browser received are read.
driver = chromium.start("--host-resolver-rules=MAP evil.test 127.0.0.1", capabilities={"goog:loggingPrefs": {"performance": "ALL"}})
wait = WebDriverWait(driver, 30)


def answers():
    """(method, URL, status) of every response the browser received since the last call, once per
    request. A response the page may not read (CORS) has only its raw headers' event."""
    sent, got = {}, {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        method, params = message["method"], message["params"]
        if method == "Network.requestWillBeSent":
            sent[params["requestId"]] = (params["request"]["method"], params["request"]["url"])
        elif method == "Network.responseReceived":
            got[params["requestId"]] = params["response"]["status"]
        elif method == "Network.responseReceivedExtraInfo":
            got.setdefault(params["requestId"], params["statusCode"])
    return [sent[r] + (status,) for r, status in got.items() if r in sent]


def visit(page):
    driver.get(page)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-seen"))
    seen = json.loads(driver.find_element(By.TAG_NAME, "body").get_attribute("data-seen"))
    time.sleep(0.5)  # the form's navigation in its frame
    return seen, [a for a in answers() if "/api/" in a[1]]


def status_of(got, via):
    return [s for (_, u, s) in got if "via=%s" % via in u]


try:
    answers()
    for name, page in (("another origin on 127.0.0.1", "http://127.0.0.1:%d/" % other_port),
                       ("another site (evil.test)", "http://evil.test:%d/" % other_port)):
        seen, got = visit(page)
        print("#", name, "->", got)
        for via in ("text-plain", "form-encoded", "form"):
            statuses = status_of(got, via)
            check(statuses and all(s in (403, 415) for s in statuses), "%s: a %s POST to /api/run is refused (%s)" % (name, via, statuses))
        check(status_of(got, "cors") == [403], "%s: reading /api/setup is refused (%s)" % (name, status_of(got, "cors")))
        check("error" in seen["read-setup"], "%s: and the page reads nothing (%s)" % (name, seen["read-setup"]))

    # DNS rebinding: evil.test on the lab's port is the lab's origin in the browser's eyes.
    OtherSite.target = "http://evil.test:%d" % lab_port
    driver.get("http://evil.test:%d/" % lab_port)
    got = answers()
    page = [s for (m, u, s) in got if u == "http://evil.test:%d/" % lab_port]
    check(page == [421], "rebinding: the lab's page under another name is refused (%s)" % page)
    check("<title>Attache lab</title>" not in driver.page_source and "data-ready" not in driver.page_source, "and none of the page is shown")
    reads = driver.execute_script("""
        return (async () => {
        const out = {};
        for (const path of ["/api/setup", "/media/x.jpg"]) {
          const r = await fetch(path); out[path] = [r.status, (await r.text()).slice(0, 80)];
        }
        const r = await fetch("/api/run", {method: "POST", headers: {"Content-Type": "application/json"}, body: arguments[0]});
        out["/api/run"] = [r.status, ""];
        return out;
        })();""", RUN)
    print("# rebinding reads:", reads)
    check(all(status == 421 for status, _ in reads.values()), "rebinding: its same-origin reads and runs are refused (%s)" % {k: v[0] for k, v in reads.items()})
    print("# %d checks passed" % check.passed)
finally:
    driver.quit()
    server.shutdown()
