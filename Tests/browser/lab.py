"""Drives `attache lab` in headless Chromium (Selenium, Debian's chromium and chromedriver).

Usage: lab.py URL [SCREENSHOT.png]

What a developer does on the page, checked by what is on it (elements, text, attributes), never by
how long anything took: load a sample, run it, see the timeline with every stage, the diff and both
previews; run a 3x3 sweep and open a cell with the keyboard; use the page at 375 px wide; paste
broken JSON and see where it is broken.
"""
import sys

import chromium
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

url = sys.argv[1]
screenshot = sys.argv[2] if len(sys.argv) > 2 else None
check = chromium.Checks()
driver = chromium.start("--window-size=1280,1000")
wait = WebDriverWait(driver, 60)
try:
    driver.get(url)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    loaded = driver.execute_script("const t = performance.getEntriesByType('navigation')[0]; return Math.round(t.loadEventEnd - t.startTime);")
    print("# page loaded in", loaded, "ms (reported, not checked)")
    find = driver.find_element

    # A sample: an FCM v1 send request (the Android copy is made for it).
    samples = Select(find(By.ID, "sample"))
    names = [o.text for o in samples.options[1:]]
    check(len(names) > 20 and "fcm-v1.json" in names and "onesignal.json" in names, "every sample payload is offered")
    samples.select_by_visible_text("fcm-v1.json")
    check('"message"' in find(By.ID, "payload").get_attribute("value"), "picking a sample fills the payload")
    deadline = find(By.ID, "deadline")
    # attache lab's --deadline (3 s unless given) is where the page starts.
    check(deadline.get_attribute("value") == "3000" and find(By.ID, "deadline-range").get_attribute("value") == "3000",
          "the deadline starts at the lab's --deadline, 3000 ms")
    deadline.clear()
    deadline.send_keys("10000")
    check(find(By.ID, "deadline-range").get_attribute("value") == "10000", "the deadline's number and slider agree")
    find(By.ID, "run").click()
    wait.until(lambda d: d.find_element(By.ID, "outcome").get_attribute("data-outcome"))

    outcome = find(By.ID, "outcome")
    check(outcome.get_attribute("data-outcome") == "enriched" and "enriched" in outcome.text, "the run's outcome is shown in words")
    stages = {e.get_attribute("data-stage") for e in driver.find_elements(By.CSS_SELECTOR, "#timeline rect.stage")}
    check({"first_byte", "download", "inspect", "render", "store"} <= stages, "the timeline shows every stage: %s" % sorted(stages))
    check(len(driver.find_elements(By.CSS_SELECTOR, "#timeline #deadline-line")) == 1, "the deadline is a line on the timeline")
    check("enriched" in find(By.ID, "timeline-outcome").text, "the outcome is marked where the payload went out")
    legend = find(By.ID, "legend").text
    check(all(s in legend for s in ("dns", "connect", "tls", "first_byte", "download", "inspect", "render", "store")), "the legend names the stages")

    added = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#diff tr.added")]
    check(any("/message/apns/payload/attachments" in r and "+ added" in r for r in added), "the diff marks the attachments added")
    changed = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#diff tr.changed")]
    check(any("/message/notification/image" in r for r in changed), "the diff marks the image URL changed")
    check(find(By.ID, "payload-bytes").text.isdigit() and "4096" in find(By.ID, "budget").text, "the size is shown against the 4 KB budget")
    roles = [r.find_elements(By.TAG_NAME, "td")[1].text for r in driver.find_elements(By.CSS_SELECTOR, "#images tbody tr")]
    check(sorted(roles) == ["android", "attachment", "thumbnail"], "the images made are listed: %s" % roles)
    check("1080 × 810" in find(By.ID, "images").text, "with their sizes")

    collapsed = find(By.ID, "preview-ios-collapsed")
    check("Weekend sale" in collapsed.text and "Up to 40% off" in collapsed.text, "the iOS banner shows the title and body")
    check("/media/" in find(By.ID, "ios-thumb").get_attribute("style"), "the iOS banner shows the thumbnail made")
    for preview in ("preview-ios-expanded", "preview-android"):
        image = driver.find_element(By.CSS_SELECTOR, "#%s img.media" % preview)
        check(image.get_attribute("src").split("/media/")[0].startswith("http"), "%s shows a stored image" % preview)
        wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image))
        check(True, "%s's image loaded" % preview)
    android_src = driver.find_element(By.CSS_SELECTOR, "#preview-android img.media").get_attribute("src")
    ios_src = driver.find_element(By.CSS_SELECTOR, "#preview-ios-expanded img.media").get_attribute("src")
    check(android_src != ios_src, "Android's BigPicture is the Android copy, not iOS's attachment")
    check("not screenshots" in find(By.ID, "previews").text, "the previews say they are previews")

    if screenshot:
        driver.set_window_size(1280, 1000)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, min(height, 2600))
        driver.save_screenshot(screenshot)
        print("# screenshot:", screenshot)

    # A 3x3 sweep: the first three faults are ticked.
    ticked = [i.get_attribute("value") for i in driver.find_elements(By.CSS_SELECTOR, "#sweep-profiles input:checked")]
    check(ticked == ["none", "slow-first-byte", "throttled"], "three faults are ticked for the sweep")
    deadlines = find(By.ID, "sweep-deadlines")
    deadlines.clear()
    deadlines.send_keys("300, 2500, 12000")
    find(By.ID, "sweep-run").click()
    wait.until(EC.visibility_of_element_located((By.ID, "sweep-downloads")))
    cells = driver.find_elements(By.CSS_SELECTOR, "#heatmap button.cell")
    check(len(cells) == 9 and all(c.get_attribute("data-outcome") != "pending" for c in cells), "the sweep's 9 cells all ran")
    def cell(profile, ms):
        return find(By.CSS_SELECTOR, '#heatmap button[data-key="%s@%d"]' % (profile, ms))
    check(cell("none", 12000).get_attribute("data-outcome") == "enriched", "no fault, 12 s: enriched")
    check(cell("slow-first-byte", 300).get_attribute("data-outcome") == "fallback", "a 1.5 s first byte at 300 ms: fallback")
    check("fallback" in cell("slow-first-byte", 300).text and "ms" in cell("slow-first-byte", 300).text, "a cell says its outcome and time in text")
    check(find(By.ID, "sweep-csv").get_attribute("href").startswith("blob:") and find(By.ID, "sweep-svg").get_attribute("href").startswith("blob:"),
          "the sweep downloads as CSV and SVG")
    target = cell("slow-first-byte", 2500)
    driver.execute_script("arguments[0].focus()", target)
    target.send_keys(Keys.ENTER)
    wait.until(EC.visibility_of_element_located((By.ID, "sweep-cell")))
    check(target.get_attribute("aria-pressed") == "true", "Enter on a focused cell opens it")
    check("slow first byte (1.5 s) at 2500 ms" in find(By.ID, "sweep-cell-title").text, "the opened cell names itself with the fault as the page shows it")
    check(target.get_attribute("aria-label").startswith("slow first byte (1.5 s) at 2500 ms"), "… and so does its label for screen readers")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#sweep-timeline rect.stage")) > 0, "the cell's timeline is drawn")

    # The keyboard alone reaches the run button from the payload.
    driver.execute_script("document.getElementById('profile').focus()")
    driver.switch_to.active_element.send_keys(Keys.TAB)
    check(driver.switch_to.active_element.get_attribute("id") == "run", "Tab goes from the fault to Run")

    # 375 px wide: nothing runs off the side of the page.
    driver.set_window_size(375, 900)
    wait.until(lambda d: d.execute_script("return window.innerWidth") <= 375)
    overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    check(overflow <= 0, "at 375 px the page is no wider than the screen (overflow %s px)" % overflow)
    check(find(By.ID, "run").is_displayed(), "and Run is there")
    driver.set_window_size(1280, 1000)

    # Broken JSON, pasted: marked at its line and column.
    area = find(By.ID, "payload")
    driver.execute_script("arguments[0].value = ''", area)
    area.send_keys('{\n  "aps": {\n    "alert": x\n  }\n}')
    find(By.ID, "run").click()
    wait.until(EC.visibility_of_element_located((By.ID, "json-error")))
    error = find(By.ID, "json-error")
    check(error.get_attribute("data-line") == "3" and error.get_attribute("data-column") == "14", "the error is at line 3, column 14")
    check("Line 3, column 14" in error.text, "and says so")
    check(area.get_attribute("aria-invalid") == "true", "the payload is marked invalid")
    caret = driver.execute_script("return arguments[0].selectionStart", area)
    check(caret == len('{\n  "aps": {\n    "alert": '), "the caret is put on the broken character")
    print("# %d checks passed" % check.passed)
finally:
    driver.quit()
