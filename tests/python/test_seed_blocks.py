"""Every code block of a seed document appears in its script unchanged apart from imports
(mindspore -> shardflow), in the document's order; the script's own parts are the marked
completion sections."""
import glob
import os
import re

import pytest

from conftest import ROOT

SEEDS = os.path.join(ROOT, "tests", "python", "seeds")
SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "python", "examples", "seed0*.py")))
BEGIN, END = "# --- shardflow: completion begin ---", "# --- shardflow: completion end ---"


def seed_file(script):
    number = os.path.basename(script)[4:7]
    found = glob.glob(os.path.join(SEEDS, number + "_*.txt"))
    return found[0] if found else None


def code_blocks(text):
    """The document's Python code: fenced ```python blocks, or (in the documents that lost their
    fences) the runs of lines without Chinese text that read as Python."""
    fenced = re.findall(r"```python(.*?)```", text, re.S)
    if fenced:
        return fenced
    blocks, current = [], []
    for line in text.splitlines() + ["。"]:
        if re.search(r"[\u3000-\u9fff\uff00-\uffef]", line):
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    code = re.compile(r"^\s*(import |from |class |def |@|[A-Za-z_][\w.]*\s*=|[A-Za-z_][\w.]*\()", re.M)
    return [b for b in blocks if code.search(b)]


def normalized(code):
    """Whitespace collapsed (some documents lost their line breaks) and imports renamed."""
    code = re.sub(r"\bmindspore\b", "shardflow", code)
    return " ".join(code.split())


def script_code(script):
    """The script's code outside completion sections, after that of the modules its header names
    ("# modules: resnet.py": the document's code that the sample keeps in another file)."""
    text = open(script, encoding="utf-8").read()
    modules = re.search(r"^# modules: (.+)$", text, re.M)
    parts = [os.path.join(os.path.dirname(script), m.strip()) for m in modules.group(1).split(",")] if modules else []
    code = ""
    for path in parts + [script]:
        body = open(path, encoding="utf-8").read()
        # Completion sections are the script's own; everything else must be the document's.
        code += re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), " ", body, flags=re.S) + "\n"
    return code


@pytest.mark.parametrize("script", SCRIPTS, ids=[os.path.basename(s) for s in SCRIPTS])
def test_every_block_of_the_seed_is_in_the_script(script):
    seed = seed_file(script)
    if seed is None:
        pytest.skip("the seed documents are not beside the project")
    blocks = [normalized(b) for b in code_blocks(open(seed, encoding="utf-8").read())]
    assert blocks, f"no code blocks found in {seed}"
    body = normalized(script_code(script))
    # Header comments are the script's own too: drop the leading comment lines.
    at = 0
    for b in blocks:
        found = body.find(b, at)
        assert found >= 0, f"{os.path.basename(script)} lacks (or reorders) this block of {os.path.basename(seed)}:\n{b[:400]}"
        at = found + len(b)


@pytest.mark.parametrize("script", SCRIPTS, ids=[os.path.basename(s) for s in SCRIPTS])
def test_nothing_but_blocks_and_completions(script):
    """Outside the completion sections and the header comment, every line belongs to a block."""
    seed = seed_file(script)
    if seed is None:
        pytest.skip("the seed documents are not beside the project")
    blocks = " ".join(normalized(b) for b in code_blocks(open(seed, encoding="utf-8").read()))
    for line in script_code(script).splitlines():
        if line.strip() and not line.startswith("#"):  # a line's own comment is the script's header
            assert normalized(line) in blocks, f"{os.path.basename(script)}: '{line.strip()}' is not the seed's"
