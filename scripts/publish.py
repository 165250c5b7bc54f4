"""Build the site for publishing, refusing while any record is stale, failed or corrupt.

    python -m scripts.publish              # check, then `mkdocs build --strict` into site/
    python -m scripts.publish --check      # only check, and list what each device lacks
    python -m scripts.publish --deploy     # check, then `mkdocs gh-deploy --strict` (GitHub Pages)

A published page promises that what it shows was recorded from the snippet as it is now: a stale, failed or
corrupt record breaks that promise, so publishing stops and names each one. A missing record does not: the
page leaves out what that device would show and says so, so missing records are listed and allowed (today
every CUDA record is missing until a GPU box makes them). The workflow .github/workflows/publish.yml runs this
on every push to main.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from scripts import records

REFUSED = ("stale", "failed", "corrupt")


def check(outputs=records.OUTPUTS, snippets=records.SNIPPETS) -> tuple[list[str], list[str]]:
    """(problems that refuse publishing, missing records that are allowed), one line each."""
    problems, missing = [], []
    for device in records.DEVICES:
        for snippet, state in records.states(device, outputs, snippets).items():
            line = f"{state:8} {device:4}  snippets/{snippet}"
            if state in REFUSED:
                problems.append(line)
            elif state == "missing":
                missing.append(line)
    return problems, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.publish",
                                     description="Publish the site only when no record is stale, failed or corrupt.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="check only")
    action.add_argument("--deploy", action="store_true", help="deploy to GitHub Pages with mkdocs gh-deploy")
    args = parser.parse_args(argv)

    problems, missing = check()
    for line in problems:
        print(line)
    if problems:
        print(f"publish: refusing, {len(problems)} record(s) stale, failed or corrupt. Remake them with "
              f"{records.REMAKE} (CUDA ones on a GPU box).", file=sys.stderr)
        return 1
    by_device = {d: sum(1 for line in missing if line.split()[1] == d) for d in records.DEVICES}
    lacking = ", ".join(f"{n} {records.LABELS[d]}" for d, n in by_device.items() if n)
    print("publish: no record is stale, failed or corrupt" +
          (f"; missing, shown as not yet recorded: {lacking}" if lacking else "; every device has every record"))
    if args.check:
        for line in missing:
            print(f"  {line}")
        return 0
    command = ["mkdocs", "gh-deploy", "--strict", "--force"] if args.deploy else ["mkdocs", "build", "--strict"]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", *command], cwd=records.ROOT, env=env).returncode


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (`--check | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
