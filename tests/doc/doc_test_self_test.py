#!/usr/bin/env python3
"""Checks that doc_test.py fails where it must: a quote that differs from its region, a C++
fragment without a snippet, a skip without a reason, a shell block that fails, bad JSON, an
unclosed fence; and passes a block that matches. Runs on pages made up here, nothing built."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_test  # noqa: E402

SNIPPET = """int main() {
  int x = 1;
  // [step]
  x += 1;
  if (x > 1) {
    x = 0;
  }
  // [step]
  return x;
}
"""


class DocTestSelfTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.tmp.name, "src")
        self.build = os.path.join(self.tmp.name, "build")
        self.work = os.path.join(self.tmp.name, "work")
        for d in (os.path.join(self.src, "examples", "snippets"), self.build, self.work):
            os.makedirs(d)
        with open(os.path.join(self.src, "examples", "snippets", "s.cc"), "w") as f:
            f.write(SNIPPET)

    def tearDown(self):
        self.tmp.cleanup()

    def blocks(self, page_text):
        blocks = doc_test.extract_blocks("page.md", page_text)
        for b in blocks:
            kind = doc_test.classify(b)
            if kind == "snippet":
                doc_test.check_snippet(b, self.src)
            elif kind == "sh":
                doc_test.run_sh(b, self.src, self.build, self.work)
            elif kind == "json":
                try:
                    doc_test.json.loads(b.text)
                except ValueError as e:
                    b.error = str(e)
        return blocks

    def one(self, page_text):
        blocks = self.blocks(page_text)
        self.assertEqual(len(blocks), 1)
        return blocks[0]

    def test_matching_snippet_passes(self):
        b = self.one("<!-- snippet: examples/snippets/s.cc#step -->\n```cpp\n"
                     "x += 1;\nif (x > 1) {\n  x = 0;\n}\n```\n")
        self.assertIsNone(b.error)

    def test_differing_snippet_fails(self):
        b = self.one("<!-- snippet: examples/snippets/s.cc#step -->\n```cpp\nx += 2;\n```\n")
        self.assertIn("line 1 of the block differs", b.error)

    def test_missing_region_fails(self):
        b = self.one("<!-- snippet: examples/snippets/s.cc#nope -->\n```cpp\nx;\n```\n")
        self.assertIn("exactly two lines", b.error)

    def test_fragment_without_snippet_fails(self):
        b = self.one("```cpp\nint y = 2;\n```\n")
        self.assertIn("must quote a program", b.error)

    def test_whole_program_is_compiled(self):
        b = self.one("```cpp\nint main() { return 0; }\n```\n")
        self.assertEqual(doc_test.classify(b), "program")

    def test_skip_needs_a_reason(self):
        self.assertIsNone(self.one("<!-- doc-test: skip — needs two hosts -->\n```sh\nfalse\n```\n").error)
        self.assertIn("needs its reason", self.one("<!-- doc-test: skip -->\n```sh\nfalse\n```\n").error)

    def test_shell_block_runs_with_build_reachable(self):
        ok = self.one("```sh\ntest -d build\necho hi > out.txt\n```\n")
        self.assertIsNone(ok.error)
        self.assertFalse(os.path.exists(os.path.join(self.src, "out.txt")))
        bad = self.one("```sh\ntrue\nfalse\ntrue\n```\n")
        self.assertIn("exited 1", bad.error)

    def test_json_is_parsed(self):
        self.assertIsNotNone(self.one("```json\n{\"a\": }\n```\n").error)
        self.assertIsNone(self.one("```json\n{\"a\": 1}\n```\n").error)

    def test_output_blocks_are_not_run(self):
        self.assertIsNone(self.one("```text\nfalse\n```\n").error)
        self.assertIsNone(self.one("```\nfalse\n```\n").error)

    def test_unclosed_fence_is_an_error(self):
        with self.assertRaises(ValueError):
            doc_test.extract_blocks("page.md", "```sh\ntrue\n")


if __name__ == "__main__":
    unittest.main()
