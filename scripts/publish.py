"""Build the site for publishing, refusing while any record is missing, stale or failed.

    python scripts/publish.py              # check, then `mkdocs build --strict` into site/
    python scripts/publish.py --check      # only check; list every problem
    python scripts/publish.py --deploy     # check, then `mkdocs gh-deploy --strict` (GitHub Pages)

A published site promises that every snippet's output was recorded on every device (CUDA and CPU) from
the snippet as it is now, and that every figure and notebook was drawn from those records. This script
names each snippet that breaks the promise and exits 1 without building. The workflow
.github/workflows/publish.yml runs it on every push to main.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import regenerate  # noqa: E402
import render_assets  # noqa: E402

ROOT = regenerate.ROOT


def problems(snippets_dir: Path = ROOT / "snippets", outputs_dir: Path = ROOT / "docs" / "outputs") -> list[str]:
    found = []
    for snippet in regenerate.find_snippets(snippets_dir):
        sha = regenerate.source_sha256(snippets_dir / snippet)
        for device in regenerate.DEVICES:
            record = regenerate.record_dir(outputs_dir, device, snippet)
            manifest = regenerate.read_manifest(record)
            if manifest is None:
                found.append(f"missing  {device:4}  snippets/{snippet}")
            elif manifest.get("exit_status") != 0:
                found.append(f"failed   {device:4}  snippets/{snippet}")
            elif manifest.get("sha256") != sha:
                found.append(f"stale    {device:4}  snippets/{snippet}")
    found += [f"stale    asset {item}" for item in render_assets.stale_figures() + render_assets.stale_notebooks()]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Publish the site only when every record is complete and fresh.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="check only")
    action.add_argument("--deploy", action="store_true", help="deploy to GitHub Pages with mkdocs gh-deploy")
    args = parser.parse_args(argv)

    found = problems()
    for line in found:
        print(line)
    if found:
        print(f"publish: refusing, {len(found)} problem(s). Remake records with scripts/regenerate.py "
              f"(CUDA ones on a GPU box), then run scripts/render_assets.py.", file=sys.stderr)
        return 1
    print("publish: every snippet has a fresh CUDA and CPU record; figures and notebooks are fresh")
    if args.check:
        return 0
    command = ["mkdocs", "gh-deploy", "--strict", "--force"] if args.deploy else ["mkdocs", "build", "--strict"]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
