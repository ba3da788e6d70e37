#!/usr/bin/env python3
"""Tests every fenced code block of README.md and docs/*.md (docs/testing.md, "Code blocks in
the docs").

Each block is handled by its language and the annotation on the line before it:

  <!-- snippet: examples/snippets/x.cc#name -->  the block must be, verbatim, the region of
      that file between two `// [name]` lines (`# [name]` in CMake files), indentation of the
      region removed; without #name, the whole file. The file is a program the build compiles
      and ctest runs, so the quoted code is compiled and run there.
  <!-- doc-test: skip — reason -->  not run; the reason is required and printed.
  <!-- doc-test: args ARGS -->  a whole C++ program is run with these arguments.

  cpp    a whole program (it has main) is built against an install of the build tree and run;
         a fragment must be a snippet.
  sh     run by bash (-e -o pipefail) in a scratch directory where build/ and the source
         tree's top-level entries resolve, so ./build/... paths work and nothing is written
         into the source tree.
  cmake  configured and built as a consumer project: the block follows a prelude that
         declares the project and an executable `app` whose main includes the umbrella header.
  json   parsed.
  anything else (text, output, formats) is not run.

Exits 0 when every block passes; prints one line per block either way.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*$")
ANNOTATION = re.compile(r"^\s*<!--\s*(snippet|doc-test):\s*(.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*(?:—|–|-|:)\s*(\S.*)$")
SH_LANGS = {"sh", "bash", "shell"}
CPP_LANGS = {"cpp", "c++", "cxx"}
SH_TIMEOUT_S = 240
PROGRAM_TIMEOUT_S = 120
BUILD_TIMEOUT_S = 600


class Block:
    def __init__(self, page, line, lang, text, annotation):
        self.page, self.line, self.lang, self.text = page, line, lang, text
        self.kind, self.value = annotation if annotation else (None, None)
        self.treatment = None  # what was done: run, snippet, skip, parse, not run
        self.error = None

    def where(self):
        return f"{self.page}:{self.line}"


def pages(source_dir):
    """README.md and every page of docs/, so that a new page is tested without a change here."""
    found = ["README.md"] + sorted(os.path.relpath(p, source_dir)
                                   for p in glob.glob(os.path.join(source_dir, "docs", "*.md")))
    return [p for p in found if os.path.isfile(os.path.join(source_dir, p))]


def extract_blocks(page, text):
    """The fenced blocks of a Markdown page, each with the annotation on the line before it
    (blank lines between them allowed). An unclosed fence is an error."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$",
                                              lines[j]):
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{i + 1}: code block never closed")
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        annotation = None
        if k >= 0:
            a = ANNOTATION.match(lines[k])
            if a:
                annotation = (a.group(1), a.group(2))
        blocks.append(Block(page, i + 1, lang, "\n".join(body) + "\n" if body else "", annotation))
        i = j + 1
    return blocks


def region(source_dir, spec):
    """The text a snippet annotation names: `path#name` (the lines between two `[name]` marker
    lines, the region's common indentation removed) or `path` (the whole file)."""
    path, _, name = spec.partition("#")
    full = os.path.join(source_dir, path)
    if not os.path.isfile(full):
        raise ValueError(f"snippet file {path} does not exist")
    with open(full, encoding="utf-8") as f:
        text = f.read()
    if not name:
        return text
    marker = re.compile(r"^\s*(//|#)\s*\[" + re.escape(name) + r"\]\s*$")
    lines = text.split("\n")
    marks = [i for i, ln in enumerate(lines) if marker.match(ln)]
    if len(marks) != 2:
        raise ValueError(f"{path} must mark region [{name}] with exactly two lines, has {len(marks)}")
    return textwrap.dedent("\n".join(lines[marks[0] + 1:marks[1]]) + "\n")


def first_difference(expected, actual):
    exp, act = expected.split("\n"), actual.split("\n")
    for n, (e, a) in enumerate(zip(exp, act), 1):
        if e != a:
            return f"line {n} of the block differs:\n  region: {e!r}\n  block:  {a!r}"
    return f"the region has {len(exp) - 1} lines, the block {len(act) - 1}"


def check_snippet(block, source_dir):
    block.treatment = f"snippet of {block.value}"
    try:
        expected = region(source_dir, block.value)
    except ValueError as e:
        block.error = str(e)
        return
    if block.text != expected:
        block.error = f"not the text of {block.value}: " + first_difference(expected, block.text)


def scratch_dir(work_dir, block, source_dir, build_dir):
    """A fresh directory per block in which build/ is the build tree and every other top-level
    entry of the source tree (scripts/, tests/, ...) resolves, as from the repository root."""
    d = os.path.join(work_dir, f"{re.sub(r'[^A-Za-z0-9]+', '_', block.page)}_{block.line}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.symlink(os.path.abspath(build_dir), os.path.join(d, "build"))
    for entry in os.listdir(source_dir):
        if entry.startswith(".") or entry.startswith("build") or entry in ("log_output", "saved_graph"):
            continue
        os.symlink(os.path.join(os.path.abspath(source_dir), entry), os.path.join(d, entry))
    return d


def run_env(home):
    env = dict(os.environ, HOME=home)
    if os.geteuid() == 0:
        # Containers run the suite as root, which Open MPI refuses unless told; a user's shell
        # does not need this.
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def use_python(python, work_dir):
    """Makes `python3` in the blocks the interpreter the package was built for: the first python3
    on PATH may be another one (a pyenv build without numpy), which the build does not use."""
    shim = os.path.join(work_dir, "python-bin")
    os.makedirs(shim, exist_ok=True)
    link = os.path.join(shim, "python3")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(python), link)
    os.environ["PATH"] = shim + os.pathsep + os.environ.get("PATH", "")


def tail(text, n=40):
    return "\n".join(text.rstrip().split("\n")[-n:])


def run(cmd, cwd, env, timeout, what):
    """Runs cmd; returns None or an error naming `what`, with the end of its output."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, text=True, errors="replace", start_new_session=True)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return f"{what} did not finish in {timeout} s; its output:\n{tail(out)}"
    if p.returncode != 0:
        return f"{what} exited {p.returncode}; its output:\n{tail(p.stdout)}"
    return None


def run_sh(block, source_dir, build_dir, work_dir):
    block.treatment = "run (bash)"
    d = scratch_dir(work_dir, block, source_dir, build_dir)
    script = os.path.join(d, "block.sh")
    with open(script, "w", encoding="utf-8") as f:
        f.write(block.text)
    block.error = run(["bash", "-e", "-o", "pipefail", script], d, run_env(d), SH_TIMEOUT_S, "the block")


def install(build_dir, work_dir):
    prefix = os.path.join(work_dir, "prefix")
    shutil.rmtree(prefix, ignore_errors=True)
    err = run(["cmake", "--install", os.path.abspath(build_dir), "--prefix", prefix], work_dir, None, BUILD_TIMEOUT_S,
              f"cmake --install {build_dir}")
    if err:
        raise RuntimeError(err)
    return prefix


def configure_and_build(project_dir, prefix, cxx):
    """Configures and builds a project against the install; None or the error."""
    build = os.path.join(project_dir, "build")
    cmd = ["cmake", "-S", project_dir, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
           f"-DCMAKE_PREFIX_PATH={prefix}"]
    if cxx:
        cmd.append(f"-DCMAKE_CXX_COMPILER={cxx}")
    err = run(cmd, project_dir, None, BUILD_TIMEOUT_S, "configuring")
    if err:
        return err
    # -k 0: every program that compiles is built, so each failure is told apart.
    return run(["cmake", "--build", build, "--parallel", "2", "--", "-k", "0"], project_dir, None,
               BUILD_TIMEOUT_S, "building")


def build_and_run_programs(programs, source_dir, build_dir, work_dir, prefix, cxx):
    """Every whole C++ program in one project (one configure), then each run."""
    project = os.path.join(work_dir, "cpp_programs")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(project)
    lines = ["cmake_minimum_required(VERSION 3.20)", "project(doc_programs LANGUAGES CXX)",
             "find_package(shardflow REQUIRED)"]
    for n, block in enumerate(programs):
        block.treatment = "compiled and run" + (f" with {block.value[len('args'):].strip()}"
                                                if block.kind == "doc-test" else "")
        with open(os.path.join(project, f"block_{n}.cc"), "w", encoding="utf-8") as f:
            f.write(block.text)
        lines += [f"add_executable(block_{n} block_{n}.cc)",
                  f"target_link_libraries(block_{n} PRIVATE shardflow::shardflow)"]
    with open(os.path.join(project, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    build_err = configure_and_build(project, prefix, cxx)
    for n, block in enumerate(programs):
        exe = os.path.join(project, "build", f"block_{n}")
        if not os.path.exists(exe):
            block.error = f"did not compile: {build_err}"
            continue
        args = block.value[len("args"):].split() if block.kind == "doc-test" else []
        d = scratch_dir(work_dir, block, source_dir, build_dir)
        block.error = run([exe] + args, d, run_env(d), PROGRAM_TIMEOUT_S, "the program")


CMAKE_PRELUDE = """cmake_minimum_required(VERSION 3.20)
project(doc_consumer LANGUAGES CXX)
add_executable(app main.cc)
"""


def build_cmake_block(n, block, work_dir, prefix, cxx):
    block.treatment = "configured and built as a consumer project"
    project = os.path.join(work_dir, f"cmake_block_{n}")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(project)
    with open(os.path.join(project, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write(CMAKE_PRELUDE + block.text)
    with open(os.path.join(project, "main.cc"), "w", encoding="utf-8") as f:
        f.write("#include <shardflow/shardflow.h>\n\nint main() { return sf::Tensor({2}).numel() == 2 ? 0 : 1; }\n")
    block.error = configure_and_build(project, prefix, cxx)


def classify(block):
    """What a block needs: 'snippet', 'skip', 'sh', 'program', 'cmake', 'json' or 'none'; a
    block that cannot be tested gets its error here."""
    if block.kind == "snippet":
        return "snippet"
    if block.kind == "doc-test":
        skip = SKIP.match(block.value)
        if skip:
            block.treatment = f"skipped: {skip.group(1)}"
            return "skip"
        if block.value.startswith("skip"):
            block.error = "a skip needs its reason: <!-- doc-test: skip — why it cannot run here -->"
            return "none"
        if not (block.value.startswith("args") and block.lang in CPP_LANGS):
            block.error = f"unknown annotation 'doc-test: {block.value}' for a {block.lang or 'plain'} block"
            return "none"
    if block.lang in SH_LANGS:
        return "sh"
    if block.lang in CPP_LANGS:
        if re.search(r"\bint\s+main\s*\(", block.text):
            return "program"
        block.error = ("a C++ fragment must quote a program: put it between `// [name]` lines of a file "
                       "under examples/snippets/ and annotate the block <!-- snippet: PATH#name -->")
        return "none"
    if block.lang == "cmake":
        return "cmake"
    if block.lang == "json":
        return "json"
    block.treatment = "not run (output or data)"
    return "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--cxx", help="the compiler that built the tree")
    ap.add_argument("--page", action="append", help="test only this page (repeatable); default: all")
    ap.add_argument("--list", action="store_true", help="only list the blocks and what each gets")
    ap.add_argument("--python", help="the interpreter the Python package was built for: a block's `python3`")
    a = ap.parse_args()
    a.source_dir, a.build_dir, a.work_dir = map(os.path.abspath, (a.source_dir, a.build_dir, a.work_dir))

    os.makedirs(a.work_dir, exist_ok=True)
    if a.python:
        use_python(a.python, a.work_dir)
    selected = a.page or pages(a.source_dir)
    blocks = []
    for page in selected:
        with open(os.path.join(a.source_dir, page), encoding="utf-8") as f:
            blocks += extract_blocks(page, f.read())

    groups = {}
    for block in blocks:
        block.group = classify(block)
        groups.setdefault(block.group, []).append(block)
    if a.list:
        for block in blocks:
            print(f"{block.where()} {block.lang or 'plain'}: {block.error or block.treatment or block.group}")
        return 0

    for block in groups.get("snippet", []):
        check_snippet(block, a.source_dir)
    for block in groups.get("json", []):
        block.treatment = "parsed as JSON"
        try:
            json.loads(block.text)
        except json.JSONDecodeError as e:
            block.error = f"not JSON: {e}"
    for block in groups.get("sh", []):
        run_sh(block, a.source_dir, a.build_dir, a.work_dir)
    if groups.get("program") or groups.get("cmake"):
        try:
            prefix = install(a.build_dir, a.work_dir)
        except RuntimeError as e:
            for block in groups.get("program", []) + groups.get("cmake", []):
                block.treatment, block.error = "compiled", str(e)
        else:
            if groups.get("program"):
                build_and_run_programs(groups["program"], a.source_dir, a.build_dir, a.work_dir, prefix, a.cxx)
            for n, block in enumerate(groups.get("cmake", [])):
                build_cmake_block(n, block, a.work_dir, prefix, a.cxx)

    failed = [b for b in blocks if b.error]
    for block in blocks:
        print(f"{'FAIL' if block.error else 'ok  '} {block.where()} {block.lang or 'plain'}: {block.treatment}")
    for block in failed:
        print(f"\n{block.where()}: {block.error}")
    print(f"\n{len(blocks)} blocks, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
