"""What the browser checks share: Debian's headless Chromium under Selenium (its chromedriver,
never one Selenium would download), and a check that counts and prints what passed."""
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


class Checks:
    def __init__(self):
        self.passed = 0

    def __call__(self, condition, what):
        if not condition:
            raise AssertionError(what)
        self.passed += 1
        print("ok -", what)


def start(*arguments, capabilities=None):
    """Headless Chromium with `arguments` besides the usual ones, and `capabilities` set."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage") + arguments:
        options.add_argument(argument)
    for name, value in (capabilities or {}).items():
        options.set_capability(name, value)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
