"""Opens HTML pages tracelab wrote in headless Chromium (Debian's chromium
and chromedriver, driven by Selenium) and prints, as JSON, per page: the
browser's errors while loading, each chart's ink (from a screenshot of the
chart's element: a chart that did not draw is blank there), the text of
each chart that overlaps other text or reaches outside the chart, the
captions drawn below their chart, and the internal links whose target is
missing.

Usage: check_pages.py PAGE.html...   (used by tests/html_pages.rs)
"""

import io
import json
import sys

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def driver():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=1280,1024"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The machine's chromedriver: Selenium Manager would fetch one.
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def ink(png):
    """What a screenshot of a chart shows: the share of pixels that are not
    the background, and how many are coloured (axes, grid and text are
    grey; the data, its bars, lines and points, is drawn in colour, so a
    chart whose data did not draw has next to none)."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    w, h = img.size
    bg = img.getpixel((0, 0))
    inked = coloured = 0
    data = img.tobytes()
    for i in range(0, len(data), 3):
        r, g, b = data[i], data[i + 1], data[i + 2]
        if max(abs(r - bg[0]), abs(g - bg[1]), abs(b - bg[2])) > 24:
            inked += 1
        if max(r, g, b) - min(r, g, b) > 60:
            coloured += 1
    return {"width": w, "height": h, "ink": inked / max(w * h, 1),
            "coloured": coloured}


# Per <svg>: the boxes of its text nodes as the browser laid them out
# (getBoundingClientRect, so rotation and the font's real widths count),
# the pairs that overlap by more than half a pixel each way, and the texts
# that reach outside the <svg>'s own box (a count cut off at the top). Per
# <figure>: whether its caption sits below the chart it labels.
LAYOUT = """
const out = [];
for (const svg of document.querySelectorAll('svg')) {
  const box = svg.getBoundingClientRect();
  const texts = [];
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (!t.textContent.trim() || r.width === 0 || r.height === 0) continue;
    texts.push({text: t.textContent, l: r.left, r: r.right, t: r.top, b: r.bottom});
  }
  const overlaps = [];
  for (let i = 0; i < texts.length; i++)
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i], b = texts[j];
      const w = Math.min(a.r, b.r) - Math.max(a.l, b.l);
      const h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
      if (w > 0.5 && h > 0.5) overlaps.push([a.text, b.text]);
    }
  const outside = texts.filter(x => x.l < box.left - 0.5 || x.r > box.right + 0.5
    || x.t < box.top - 0.5 || x.b > box.bottom + 0.5).map(x => x.text);
  out.push({labels: texts.length, overlaps: overlaps, outside: outside});
}
const below = [];
for (const f of document.querySelectorAll('figure')) {
  const c = f.querySelector('figcaption'), g = f.querySelector('svg');
  if (c && g && c.getBoundingClientRect().top >= g.getBoundingClientRect().bottom - 0.5)
    below.push(c.textContent);
}
return {svgs: out, captions_below: below,
        figures: document.querySelectorAll('figure > figcaption').length};
"""


def check(d, path):
    d.get("file://" + path)
    state = d.execute_script("return document.readyState")
    errors = [e["message"] for e in d.get_log("browser")
              if e.get("level") in ("SEVERE", "ERROR")]
    charts = []
    for el in d.find_elements(By.CSS_SELECTOR, "svg"):
        d.execute_script("arguments[0].scrollIntoView()", el)
        charts.append(ink(el.screenshot_as_png))
    layout = d.execute_script(LAYOUT)
    for c, lay in zip(charts, layout["svgs"]):
        c.update(lay)
    broken = d.execute_script(
        """
        const out = [];
        for (const a of document.querySelectorAll('a[href^="#"]')) {
          const id = decodeURIComponent(a.getAttribute('href').slice(1));
          if (!document.getElementById(id) && !document.getElementsByName(id).length) out.push(id);
        }
        return out;
        """)
    links = d.execute_script("return document.querySelectorAll('a[href^=\"#\"]').length")
    return {"ready": state, "errors": errors, "charts": charts,
            "internal_links": links, "broken_links": broken,
            "captions_below": layout["captions_below"],
            "captioned_figures": layout["figures"],
            "title": d.title}


def main():
    d = driver()
    try:
        print(json.dumps({p: check(d, p) for p in sys.argv[1:]}, indent=1))
    finally:
        d.quit()


if __name__ == "__main__":
    main()
