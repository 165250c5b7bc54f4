"""Fetch the JavaScript the site serves itself, so pages load with no third-party request.

Writes docs/assets/vendor/{mathjax-tex-svg.js, LICENSES.txt} from the npm registry with
`npm pack` (the files are committed; run this only to change a version):

    python scripts/vendor_assets.py

MathJax's SVG build carries its fonts inside the script, so no font file is fetched at page time. Diagrams
need no script: scripts/diagrams.py draws them as SVG when the site is built.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[1] / "docs" / "assets" / "vendor"

# package spec -> (file inside the npm tarball, name under docs/assets/vendor)
ASSETS = {
    "mathjax@3.2.2": ("package/es5/tex-svg.js", "mathjax-tex-svg.js"),
}


def main() -> int:
    VENDOR.mkdir(parents=True, exist_ok=True)
    licenses = ["Licenses of the vendored scripts\n"]
    with tempfile.TemporaryDirectory() as tmp:
        for spec, (member, target) in ASSETS.items():
            print(f"fetching {spec}", file=sys.stderr)
            tgz = subprocess.run(
                ["npm", "pack", spec, "--silent"], cwd=tmp, check=True, capture_output=True, text=True
            ).stdout.strip().splitlines()[-1]
            with tarfile.open(Path(tmp) / tgz) as tar:
                (VENDOR / target).write_bytes(tar.extractfile(member).read())
                license_text = tar.extractfile("package/LICENSE").read().decode()
            licenses.append(f"\n== {spec} ({target})\n\n{license_text.strip()}\n")
    (VENDOR / "LICENSES.txt").write_text("".join(licenses))
    print(f"wrote {len(ASSETS)} scripts to {VENDOR}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
