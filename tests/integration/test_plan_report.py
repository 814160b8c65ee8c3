"""`gpuslice plan --format html` on the GenAI sample: one self-contained page (no script, no
external URL) that Debian's headless Chromium renders; the screenshot is a real picture (not
blank), and the rendered DOM holds the key elements: the summary, GPUs before and after,
the cost waterfall, the utilization distribution and the workload table."""
import pathlib
import shutil
import struct
import subprocess
import zlib

import pytest

from conftest import BIN, run

GPUSLICE = BIN / "gpuslice"
DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "alibaba-genai"
METRICS = [DATA / "pod_gpu_duty_cycle_anon.csv.gz", DATA / "pod_gpu_memory_used_bytes_anon.csv.gz"]
KEY_IDS = ["summary", "gpus-before-after", "cost-waterfall", "util-distribution", "workload-table"]
CHROMIUM = shutil.which("chromium")
# Chromium can take long to start on a loaded two-core machine.
CHROMIUM_TIMEOUT = 240


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "plan.html"
    r = run([GPUSLICE, "plan", "--metrics", *METRICS, "--format", "html", "--output", out])
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    return out


def chromium(*args, cwd):
    if not CHROMIUM:
        pytest.skip("Debian's chromium is not installed (scripts/deps.sh installs it)")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--user-data-dir={cwd / 'profile'}", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT)


def test_page_is_self_contained(report):
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    assert "http://" not in html and "https://" not in html and "url(" not in html
    for key in KEY_IDS:
        assert f'id="{key}"' in html
    assert html.count("<tr>") == 1 + 143  # header and one row per workload


def test_rendered_dom_has_the_key_elements(report, tmp_path):
    r = chromium("--dump-dom", report.as_uri(), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    for key in KEY_IDS:
        assert f'id="{key}"' in dom, key
    assert dom.count("<svg") >= 3


def png_pixels(path):
    """Width, height and the rows of RGB(A) pixels of an 8-bit PNG, unfiltered."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data[pos + 8:pos + 8 + n])
        elif kind == b"IDAT":
            idat.append(data[pos + 8:pos + 8 + n])
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0
    bpp = 3 if ctype == 2 else 4
    return w, h, bpp, unfilter(zlib.decompress(b"".join(idat)), w, h, bpp)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def unfilter(raw, w, h, bpp):
    stride, prev, rows, pos = w * bpp, bytearray(w * bpp), [], 0
    for _ in range(h):
        ft, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            pred = (0, a, prev[i], (a + prev[i]) >> 1, paeth(a, prev[i], c))[ft]
            line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return rows


def test_screenshot_is_not_blank(report, tmp_path):
    shot = tmp_path / "out.png"
    r = chromium(f"--screenshot={shot}", "--window-size=1400,2000", report.as_uri(), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 10000
    w, h, bpp, rows = png_pixels(shot)
    assert (w, h) == (1400, 2000)
    colours = {}
    for row in rows[::5]:
        for x in range(0, w * bpp, bpp * 5):
            px = row[x:x + 3]
            colours[px] = colours.get(px, 0) + 1
    sampled = sum(colours.values())
    background = max(colours.values())
    non_white = sampled - colours.get(b"\xff\xff\xff", 0)
    assert len(colours) >= 20, "too few colours: a blank or broken page"
    assert sampled - background > sampled * 0.05, "almost everything is one colour"
    assert non_white > sampled * 0.05
