"""scripts/publish.py refuses while any record is missing, stale or failed, and names each one."""

import json

import publish
import regenerate
from harness import ROOT


def test_publish_names_missing_stale_and_failed_records(tmp_path):
    snippets, outputs = tmp_path / "snippets", tmp_path / "outputs"
    (snippets / "demo").mkdir(parents=True)
    for name in ("fresh", "stale", "failed", "missing"):
        (snippets / "demo" / f"{name}.py").write_text(f"print({name!r})\n")

    for name, status in (("fresh", 0), ("stale", 0), ("failed", 1)):
        for device in regenerate.DEVICES:
            folder = outputs / device / "demo" / name
            folder.mkdir(parents=True)
            sha = regenerate.source_sha256(snippets / "demo" / f"{name}.py")
            (folder / "manifest.json").write_text(json.dumps({"sha256": sha, "exit_status": status}))
    (snippets / "demo" / "stale.py").write_text("print('edited since')\n")
    found = [line.split() for line in publish.problems(snippets, outputs) if not line.split()[1] == "asset"]
    assert sorted(found) == sorted(
        [["failed", device, "snippets/demo/failed.py"] for device in ("cuda", "cpu")]
        + [["stale", device, "snippets/demo/stale.py"] for device in ("cuda", "cpu")]
        + [["missing", device, "snippets/demo/missing.py"] for device in ("cuda", "cpu")]
    )


def test_publish_check_refuses_while_cuda_records_are_missing(capsys):
    missing_cuda = not any((ROOT / "docs" / "outputs" / "cuda").glob("**/manifest.json"))
    status = publish.main(["--check"])
    out = capsys.readouterr()
    if missing_cuda:
        assert status == 1 and "missing  cuda  snippets/eager_mode/complex_activation.py" in out.out
        assert "publish: refusing" in out.err
    else:
        assert status in (0, 1)
