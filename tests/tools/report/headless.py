"""What the browser tests share: where Chromium is, and the flags it runs headless with."""
import shutil

# As root in a container: no sandbox, no GPU, no shared-memory assumptions, nothing from the
# network; the caller adds a private profile (--user-data-dir) and what it loads.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium():
    """The Chromium (or Chrome) on PATH, else None: the tests then skip with one line."""
    for c in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(c)
        if path:
            return path
    return None
