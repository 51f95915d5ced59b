"""Screenshots of the history page in headless chromium: the top (summary and the first series) and the H200 4x1 section.

    python docs/results/history/screenshot.py PAGE_DIR OUT_DIR

PAGE_DIR holds the page built by ``python -m harness history`` (README.md here has the command). Chromium
screenshots only its window, so the page is shot once in a window as tall as the page, then cropped; a probe
script added to a copy of the page finds where the sections start.
"""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

WIDTH = 1280
SECTION = "h200-qwen3-1.7b-lora-4x1"
# the page's height; the section's top and bottom; the bottom of the first series' plot
PROBE = ("<script>addEventListener('load', () => { const s = document.getElementById('SECTION');"
         " let end = s.nextElementSibling; while (end && end.tagName !== 'H2') end = end.nextElementSibling;"
         " const img = document.images[0];"
         " document.title = [document.body.scrollHeight, s.offsetTop, end ? end.offsetTop : document.body.scrollHeight,"
         " img.offsetTop + img.offsetHeight].join(' '); });</script>").replace("SECTION", SECTION)


def chrome(*args: str) -> str:
    browser = next(p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p)
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120, check=True).stdout


def main(page: Path, out: Path) -> None:
    probe = page / "probe.html"
    probe.write_text((page / "index.html").read_text().replace("</body>", PROBE + "</body>"))
    try:
        title = re.search(r"<title>([\d ]+)</title>", chrome(f"--window-size={WIDTH},1000", "--dump-dom", probe.as_uri())).group(1)
        height, start, end, first_plot = map(int, title.split())
    finally:
        probe.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "full.png"
        chrome(f"--window-size={WIDTH},{height}", f"--screenshot={full}", (page / "index.html").as_uri())
        img = Image.open(full)
        out.mkdir(parents=True, exist_ok=True)
        for name, box in (("page-top.png", (0, 0, WIDTH, first_plot + 50)), (f"page-{SECTION}.png", (0, start - 10, WIDTH, end - 10))):
            img.crop(box).convert("RGB").quantize(256).save(out / name, optimize=True)  # a palette: a third of the size


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
